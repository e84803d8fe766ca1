# Sourced by the scripts that run `segadvise check` over the trainer's example configs
# (check-examples.sh, check-phases.sh, check-tiers.sh): arguments [SEGADVISE_BIN] [EXAMPLES_ROOT] [GPU]
# -> $bin, $root, $gpu; checks both exist and changes into EXAMPLES_ROOT, so that the examples'
# `simpletuner/examples/…` data-backend paths resolve as they do for the trainer.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="$(realpath "${1:-$here/build/segadvise}")"
root="$(realpath "${2:-$here/../shared/reference/simpletuner-examples}")"
gpu="${3:-h100}"
[ -x "$bin" ] || { echo "no segadvise binary at $bin (build first)" >&2; exit 2; }
[ -d "$root/simpletuner/examples" ] || { echo "no simpletuner/examples under $root" >&2; exit 2; }
cd "$root" || exit 2
