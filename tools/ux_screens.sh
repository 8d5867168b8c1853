#!/usr/bin/env bash
# The first screen of a run's pages, as a person sees it: index.html, the campaign's
# report.html and predict.html rendered by headless Chromium to PNG (1280x900, the
# part above the fold; --full for the whole page).
#
#   tools/ux_screens.sh RUN_DIR [OUT_DIR] [--full]
#
# RUN_DIR is a `p2pscope run --out` directory; OUT_DIR defaults to RUN_DIR/screens.
# A page that is not there is named and skipped. Exit 1 when no page was rendered.
# UX_SCREENS_TIMEOUT: seconds a page may take (default 120; a loaded machine is slow).
set -euo pipefail
run_dir=${1:?usage: tools/ux_screens.sh RUN_DIR [OUT_DIR] [--full]}
out_dir=${2:-$run_dir/screens}
full=0
for a in "$@"; do [ "$a" = "--full" ] && full=1; done
[ "$out_dir" = "--full" ] && out_dir=$run_dir/screens
browser=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)}
[ -n "$browser" ] || { echo "ux_screens: no chromium found (apt-get install chromium, or set CHROMIUM)" >&2; exit 1; }
mkdir -p "$out_dir"
run_dir=$(cd "$run_dir" && pwd)
rendered=0
for page in index.html campaign/report.html predict.html; do
  src="$run_dir/$page"
  if [ ! -f "$src" ]; then
    echo "ux_screens: $page: not in $run_dir, skipped" >&2
    continue
  fi
  png="$out_dir/$(basename "${page%.html}").png"
  height=900
  if [ "$full" = 1 ]; then height=12000; fi
  # A throwaway profile: no state from (or into) anyone's browser.
  profile=$(mktemp -d)
  timeout "${UX_SCREENS_TIMEOUT:-120}" "$browser" --headless --no-sandbox --no-zygote --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync --hide-scrollbars --user-data-dir="$profile" \
    --window-size=1280,$height --screenshot="$png" "file://$src" >/dev/null 2>&1 || true
  rm -rf "$profile"
  if [ -s "$png" ]; then
    echo "$png"
    rendered=$((rendered + 1))
  else
    echo "ux_screens: $page: chromium wrote no image" >&2
  fi
done
[ "$rendered" -gt 0 ]
