#!/usr/bin/env bash
# Writes a gzipped man page for one of our programs from its own --help, so the page says what
# the program does: help2man for the synopsis and options, plus, for ampstudio-cli, one
# sub-section per command from `ampstudio-cli COMMAND --help`.
#   make-manpage.sh PROGRAM DESCRIPTION OUT.1.gz
set -euo pipefail
program="$1" description="$2" out="$3"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export QT_QPA_PLATFORM=offscreen XDG_RUNTIME_DIR="$work"  # the app parses options only with a platform

# roff: a backslash is \e, and a line may not start with a dot or an apostrophe.
roff() { sed -e 's/\\/\\e/g' -e "s/^\([.']\)/\\\\\&\1/"; }

include="$work/include.h2m"
: > "$include"
if [ "$(basename "$program")" = ampstudio-cli ]; then
  echo "[COMMANDS]" >> "$include"
  for command in $("$program" --help | sed -n '/^commands:/,/^Run /s/^  \([a-z]\+\) .*/\1/p'); do
    printf '.SS %s\n.nf\n' "$command" >> "$include"
    "$program" "$command" --help | roff >> "$include"
    printf '.fi\n' >> "$include"
  done
fi
if [ "$(basename "$program")" = ampstudio-cli ]; then
  cat >> "$include" <<'H2M'
[EXIT STATUS]
0 when the work is done; 1 when a training run diverged; 2 for bad input (a config key, file or
entry, named in one line on standard error) or a file that could not be written.
H2M
else
  cat >> "$include" <<'H2M'
[FILES]
.TP
.I ~/.config/AMP Studio/ampstudio.conf
Window layout, palette, presentation scale and recent files.
.TP
.I ~/.local/share/AMP Studio/AMP Studio/last-session.ampx
The runs and event log shown when the app last closed; the next plain start reopens them.
H2M
fi
cat >> "$include" <<'H2M'
[ENVIRONMENT]
.TP
.B AMP_CUDA_PLUGIN
The CUDA backend to load instead of the installed libampstudio\-cuda.so (a path).
.TP
.B CUDA_VISIBLE_DEVICES
Which NVIDIA GPUs the CUDA backend may use, as for any CUDA program.
[SEE ALSO]
.BR ampstudio (1),
.BR ampstudio\-cli (1)
H2M
help2man --no-info --no-discard-stderr --section=1 --name="$description" \
  --version-string="$("$program" --version | awk '{print $NF}')" \
  --include="$include" --output="$work/page.1" "$program"
gzip -9n < "$work/page.1" > "$out"
