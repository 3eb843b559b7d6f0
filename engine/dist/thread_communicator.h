// N ranks as N threads of one process: the collectives of Communicator over shared memory, with
// a barrier per call. Not a transport for runs (those use Open MPI between processes): it lets
// the tests drive data-parallel training where mpirun cannot go (under the sanitizers, in the
// GPU suite's single program), with the same trainer code and the same collectives' semantics.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/dist/communicator.h"

namespace amp {

class ThreadRanks {
 public:
  // timeoutS > 0: a collective that waits longer than that for the other ranks ends with a
  // CommunicatorError on every rank still waiting, as the MPI transport's watchdog ends a run
  // (a rank that died or stopped); the ranks are then unusable (every later call throws).
  explicit ThreadRanks(int ranks, double timeoutS = 0)
      : m_ranks(ranks), m_timeoutS(timeoutS), m_slots(std::size_t(ranks)) {}
  int ranks() const { return m_ranks; }
  double timeoutS() const { return m_timeoutS; }

  // Each rank's thread calls this with its own data; `combine` runs once, on the last rank to
  // arrive, over every rank's slot, before anyone leaves.
  template <class Combine>
  void collective(int rank, std::vector<std::uint8_t>& mine, const char* what, Combine combine) {
    std::unique_lock lock(m_mutex);
    if (m_broken) throw CommunicatorError(failure(rank, what));
    const std::uint64_t round = m_round;
    m_slots[std::size_t(rank)] = &mine;
    if (++m_arrived == m_ranks) {
      combine(m_slots);
      m_arrived = 0;
      ++m_round;
      m_wake.notify_all();
      return;
    }
    const auto done = [&] { return m_round != round || m_broken; };
    if (m_timeoutS > 0) {
      if (!m_wake.wait_for(lock, std::chrono::duration<double>(m_timeoutS), done)) m_broken = true;
    } else {
      m_wake.wait(lock, done);
    }
    if (m_round == round) {  // timed out here, or another waiting rank did
      m_wake.notify_all();
      throw CommunicatorError(failure(rank, what));
    }
  }

 private:
  std::string failure(int rank, const char* what) const {
    char text[64];
    std::snprintf(text, sizeof text, "%.3g", m_timeoutS);
    return "rank " + std::to_string(rank) + ": " + what + " did not complete within " + text +
           " s: another rank died or stopped";
  }

  int m_ranks;
  double m_timeoutS;
  std::mutex m_mutex;
  std::condition_variable m_wake;
  int m_arrived = 0;
  std::uint64_t m_round = 0;
  bool m_broken = false;
  std::vector<std::vector<std::uint8_t>*> m_slots;
};

class ThreadCommunicator final : public Communicator {
 public:
  ThreadCommunicator(std::shared_ptr<ThreadRanks> ranks, int rank) : m_all(std::move(ranks)), m_rank(rank) {}
  int rank() const override { return m_rank; }
  int size() const override { return m_all->ranks(); }
  std::string description() const override { return std::to_string(size()) + " ranks in threads"; }
  double timeoutSeconds() const override { return m_all->timeoutS(); }

  void allReduceSum(std::span<float> data, const char* what) override { sum(data, what); }
  void allReduceSum(std::span<double> data, const char* what) override { sum(data, what); }

  void broadcast(std::span<std::uint8_t> data, int root, const char* what) override {
    std::vector<std::uint8_t> mine(data.begin(), data.end());
    m_all->collective(m_rank, mine, what, [&](auto& slots) {
      for (auto* s : slots) *s = *slots[std::size_t(root)];
    });
    std::copy(mine.begin(), mine.end(), data.begin());
  }

  std::vector<double> gatherToRoot(std::span<const double> values, const char* what) override {
    std::vector<std::uint8_t> mine(values.size_bytes());
    std::memcpy(mine.data(), values.data(), values.size_bytes());
    std::vector<double> all;
    m_all->collective(m_rank, mine, what, [&](auto& slots) {
      std::vector<std::uint8_t> joined;
      for (auto* s : slots) joined.insert(joined.end(), s->begin(), s->end());
      *slots[0] = joined;
    });
    if (m_rank == 0) {
      all.resize(mine.size() / sizeof(double));
      std::memcpy(all.data(), mine.data(), mine.size());
    }
    return all;
  }

 private:
  // Summed in rank order, the same on every rank.
  template <class T>
  void sum(std::span<T> data, const char* what) {
    std::vector<std::uint8_t> mine(data.size_bytes());
    std::memcpy(mine.data(), data.data(), data.size_bytes());
    m_all->collective(m_rank, mine, what, [&](auto& slots) {
      std::vector<T> total(data.size(), T(0));
      for (auto* s : slots) {
        const T* v = reinterpret_cast<const T*>(s->data());
        for (std::size_t i = 0; i < total.size(); ++i) total[i] += v[i];
      }
      for (auto* s : slots) std::memcpy(s->data(), total.data(), s->size());
    });
    std::memcpy(data.data(), mine.data(), data.size_bytes());
  }

  std::shared_ptr<ThreadRanks> m_all;
  int m_rank;
};

}  // namespace amp
