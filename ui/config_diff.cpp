#include "ui/config_diff.h"

#include "engine/config/config_schema.h"

namespace amp::ui {

namespace {

bool isWorkloadKey(const std::string& key) {
  return key.rfind("model.", 0) == 0 || key.rfind("data.", 0) == 0 || key == "train.batch_size";
}

}  // namespace

QVector<ConfigDifference> configDifferences(const RunConfig& a, const RunConfig& b) {
  const auto fa = flattenConfig(a);
  const auto fb = flattenConfig(b);
  QVector<ConfigDifference> out;
  // Both listings come from the same schema table, so they line up key by key; the lookup
  // below only guards against a key that one of them lists conditionally.
  for (const auto& [key, va] : fa) {
    if (key == "name") continue;
    std::string vb;
    for (const auto& [k, v] : fb)
      if (k == key) {
        vb = v;
        break;
      }
    if (va != vb) out.append({QString::fromStdString(key), QString::fromStdString(va), QString::fromStdString(vb)});
  }
  for (const auto& [key, vb] : fb) {
    bool inA = false;
    for (const auto& kv : fa) inA |= kv.first == key;
    if (!inA && key != "name") out.append({QString::fromStdString(key), QString(), QString::fromStdString(vb)});
  }
  return out;
}

QStringList workloadDifferences(const RunConfig& a, const RunConfig& b) {
  QStringList keys;
  for (const ConfigDifference& d : configDifferences(a, b))
    if (isWorkloadKey(d.key.toStdString())) keys << d.key;
  return keys;
}

}  // namespace amp::ui
