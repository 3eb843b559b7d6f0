#!/usr/bin/env bash
# Builds the Debian packages from build/release and checks them as a user installing them would
# meet them: lintian (no errors), desktop-file-validate, appstreamcli validate, the dependencies
# satisfied by this Debian's own packages, then an install into a clean root (dpkg --root: a
# fresh dpkg database, nothing of the host's), the installed CLI and app run from there, the
# MIME types and the desktop entry doing their part in opening an .ampx, and a purge that leaves
# nothing behind. installer/test.sh runs it after the test suites.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build/release
work=$(mktemp -d "${TMPDIR:-/tmp}/ampstudio-package.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "package test: $*" >&2; exit 1; }

version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
(cd "$build" && rm -f ampstudio*_"$version"_*.deb && cpack -G DEB > "$work/cpack.log" 2>&1) ||
  { cat "$work/cpack.log"; fail "cpack failed"; }
debs=("$build"/ampstudio*_"$version"_*.deb)
echo "packages: ${debs[*]##*/}"
cuda_deb=$(ls "$build"/ampstudio-cuda_"$version"_*.deb 2>/dev/null || true)

# lintian: errors fail the test; warnings are listed (README, "The Debian package", says why
# the remaining ones stay).
lintian_rc=0
lintian --fail-on error --tag-display-limit 0 "${debs[@]}" > "$work/lintian.log" 2>&1 || lintian_rc=$?
grep -v 'root privileges' "$work/lintian.log" || true
[ "$lintian_rc" -eq 0 ] || fail "lintian reports errors (exit $lintian_rc)"

# The dependencies are all Debian's: dpkg checks them against this system's installed
# packages without installing anything.
dpkg --no-act --force-not-root --log=/dev/null -i "${debs[@]}" > "$work/noact.log" 2>&1 ||
  { cat "$work/noact.log"; fail "the packages' dependencies are not met by this Debian's packages"; }
if [ -n "$cuda_deb" ]; then
  # What the plugin links besides NVIDIA's libraries must be in its written-out Depends.
  mkdir -p "$work/shlibs/debian" && echo "Source: ampstudio" > "$work/shlibs/debian/control"
  dpkg-deb -x "$cuda_deb" "$work/cudadeb"
  wanted=$(cd "$work/shlibs" && dpkg-shlibdeps --ignore-missing-info -O "$work"/cudadeb/usr/lib/*/libampstudio-cuda.so \
             "$work"/cudadeb/usr/lib/ampstudio/libampstudio-cuda.so 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
  declared=$(dpkg-deb -f "$cuda_deb" Depends)
  for dep in $(echo "$wanted" | tr ',' '\n' | sed 's/ *(.*//; s/ //g'); do
    [[ ",$declared" == *", $dep ("* || ",$declared" == *",$dep ("* ]] ||
      fail "ampstudio-cuda's Depends lacks $dep (dpkg-shlibdeps: $wanted)"
  done
fi

# A clean root: a dpkg database of its own, holding nothing but our packages.
root="$work/root"
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" "$root/var/lib/dpkg/triggers"
touch "$root/var/lib/dpkg/status" "$root/var/lib/dpkg/available"
dpkg --root="$root" --force-depends --force-not-root --force-script-chrootless --log=/dev/null -i "${debs[@]}" \
  > "$work/install.log" 2>&1 || { cat "$work/install.log"; fail "dpkg -i into a clean root failed"; }

desktop-file-validate "$root"/usr/share/applications/*.desktop || fail "desktop-file-validate"
appstreamcli validate --no-net "$root"/usr/share/metainfo/*.metainfo.xml || fail "appstreamcli validate"
for page in ampstudio ampstudio-cli; do
  [ -s "$root/usr/share/man/man1/$page.1.gz" ] || fail "no man page for $page"
  zcat "$root/usr/share/man/man1/$page.1.gz" | grep -q '^\.SH OPTIONS\|^\.SH COMMANDS' || fail "$page.1 has no options"
done

# The installed programs, from the installed files.
export PATH="$root/usr/bin:$PATH" QT_QPA_PLATFORM=offscreen XDG_RUNTIME_DIR="$work/xdg"
export XDG_DATA_DIRS="$root/usr/share:${XDG_DATA_DIRS:-/usr/local/share:/usr/share}"
mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
export HOME="$work/home" XDG_CONFIG_HOME="$work/home/.config" XDG_DATA_HOME="$work/home/.local/share"
ampstudio-cli --help | grep -q '^commands:' || fail "ampstudio-cli --help"
[ "$(ampstudio-cli --version)" = "ampstudio-cli $version" ] || fail "ampstudio-cli --version"
ampstudio-cli devices > "$work/devices.txt" || fail "ampstudio-cli devices"
if [ -n "$cuda_deb" ] && grep -q 'not installed' "$work/devices.txt"; then
  cat "$work/devices.txt"; fail "the installed CUDA plugin was not found"
fi
ampstudio-cli run --preset spirals --set train.steps=20 --out "$work/run" --quiet || fail "ampstudio-cli run"
[ -s "$work/run/summary.json" ] || fail "the installed CLI's run has no summary.json"
timeout 300 ampstudio --lesson spirals --steps 20 --screenshot "$work/lesson.png" > "$work/app.log" 2>&1 ||
  { cat "$work/app.log"; fail "ampstudio --lesson spirals --screenshot"; }
[ -s "$work/lesson.png" ] || fail "no screenshot from the installed app"

# A machine without NVIDIA's libraries: the dynamic loader run with its cache off and only
# Debian's library folders, so libcudart and friends (installed here, under /usr/local) are not
# found. The programs still start and train on the CPU; `devices` names the missing library.
# (Through the loader /proc/self/exe is the loader, so the plugin is named explicitly.)
if [ -n "$cuda_deb" ]; then
  loader=$(readelf -l "$root/usr/bin/ampstudio-cli" | sed -n 's/.*interpreter: \(.*\)]/\1/p')
  arch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
  no_cuda=(env AMP_CUDA_PLUGIN="$(ls "$root"/usr/lib/ampstudio/libampstudio-cuda.so)"
           "$loader" --inhibit-cache --library-path "/lib/$arch:/usr/lib/$arch")
  "${no_cuda[@]}" "$root/usr/bin/ampstudio-cli" devices > "$work/devices-nocuda.txt" || fail "devices without CUDA libraries"
  grep -q 'no usable GPU: the CUDA backend cannot load: libcud[a-zA-Z]*\.so' "$work/devices-nocuda.txt" ||
    { cat "$work/devices-nocuda.txt"; fail "devices without CUDA libraries should name the missing one"; }
  "${no_cuda[@]}" "$root/usr/bin/ampstudio-cli" run --preset spirals --set train.steps=5 --out "$work/run-nocuda" --quiet ||
    fail "ampstudio-cli run without CUDA libraries"
  timeout 300 "${no_cuda[@]}" "$root/usr/bin/ampstudio" --lesson spirals --steps 5 --screenshot "$work/nocuda.png" \
    > "$work/app-nocuda.log" 2>&1 || { cat "$work/app-nocuda.log"; fail "ampstudio without CUDA libraries"; }
fi

# Opening an .ampx from a file manager: the MIME database knows *.ampx and *.amprun.zip, the
# desktop database gives them to our desktop entry, and its Exec line opens the file.
update-mime-database "$root/usr/share/mime"
grep -q ':application/x-ampstudio-experiment:\*\.ampx$' "$root/usr/share/mime/globs2" || fail "no MIME glob for *.ampx"
grep -q ':application/x-ampstudio-run-bundle:\*\.amprun\.zip$' "$root/usr/share/mime/globs2" || fail "no MIME glob for *.amprun.zip"
update-desktop-database "$root/usr/share/applications"
grep -q '^application/x-ampstudio-experiment=org.ampstudio.AmpStudio.desktop;' \
  "$root/usr/share/applications/mimeinfo.cache" || fail "the desktop entry does not open .ampx files"
ampstudio-cli export --run "$work/run" --format ampx --output "$work/runs.ampx" > /dev/null || fail "export --format ampx"
exec_line=$(sed -n 's/^Exec=//p' "$root/usr/share/applications/org.ampstudio.AmpStudio.desktop")
[ "$exec_line" = "ampstudio %f" ] || fail "unexpected Exec line: $exec_line"
timeout 120 ampstudio "$work/runs.ampx" --screenshot "$work/opened.png" > "$work/open.log" 2>&1 ||
  { cat "$work/open.log"; fail "the installed app could not open runs.ampx"; }
grep -q '^spirals .* finished .* 20 steps' "$work/open.log" || { cat "$work/open.log"; fail "runs.ampx opened without its run"; }
rm -rf "$root/usr/share/mime"/[!p]* "$root/usr/share/applications/mimeinfo.cache"  # what the test made, not dpkg

# Removal leaves nothing of ours behind.
dpkg --root="$root" --force-depends --force-not-root --force-script-chrootless --log=/dev/null -P \
  $(for d in "${debs[@]}"; do dpkg-deb -f "$d" Package; done) > "$work/purge.log" 2>&1 ||
  { cat "$work/purge.log"; fail "dpkg -P failed"; }
left=$(find "$root" -path "$root/var" -prune -o ! -type d -print)
[ -z "$left" ] || fail "files left after purge: $left"
echo "package test: ${debs[*]##*/} built, checked, installed, run and purged"
