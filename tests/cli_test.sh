#!/usr/bin/env bash
# Whole-process checks of the CLI: answers, exit codes, error messages. Usage: cli_test.sh BIN
set -u
bin=$1
pass=0 fail=0
expect() {  # expect CODE PATTERN -- ARGS...
  local code=$1 pattern=$2; shift 3
  local out rc
  out=$("$bin" "$@" 2>&1); rc=$?
  if [[ $rc -eq $code ]] && grep -qE -- "$pattern" <<<"$out"; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "FAIL: segadvise $* -> rc $rc (want $code), output:"; head -5 <<<"$out"
  fi
}
expect 0 'Recommendation: ' -- --model wan14b --gpu l40s
expect 0 '"gradient_checkpointing_segment_stride"' -- --model wan14b --gpu l40s
expect 0 '"recommendation"' -- advise --model flux --gpu 4090 --format json
expect 0 '^\| schedule' -- advise --model sd3 --gpu h100 --format markdown
expect 2 "unknown model 'wan15b'.*nearest" -- --model wan15b --gpu l40s
expect 2 "unknown GPU 'l40'" -- --model wan14b --gpu l40
expect 2 "--resolution: 'big'" -- --model wan14b --gpu l40s --resolution big
expect 2 "unknown precision 'int9'" -- --model flux --gpu l40s --precision int9
expect 2 "--batch: must be positive" -- --model flux --gpu l40s --batch 0
expect 1 'Nothing fits' -- --model wan14b --gpu 3090 --ramtorch off
expect 1 '"supported": false' -- predict --model sdxl --gpu h100 --schedule interval2 --format json
expect 1 'not supported' -- predict --model sdxl --gpu h100 --schedule interval2
expect 1 'rejects overlapping' -- predict --model wan14b --gpu h100 --schedule seg4-stride2
expect 0 'fits' -- predict --model sd3 --gpu h100 --schedule seg2-stride4
expect 0 'fits' -- predict --model qwen-image --gpu h100 --schedule layer --backend unsloth
expect 0 'wan2.1-14b' -- list models
expect 0 'l40s' -- list gpus
expect 0 'custom card' -- --model sdxl --vram-gib 12
# no input aborts: numbers too large for their type, a zero aspect, an unknown command
expect 2 "segadvise: error: --resolution '99999999999x480': width: .* not an integer in \[1, 65536\]" -- --model flux --gpu h100 --resolution 99999999999x480
expect 2 "segadvise: error: schedule 'interval99999999999': interval: .* is not an integer" -- predict --model flux --gpu h100 --schedule interval99999999999
expect 2 "--aspect: '1:0'" -- advise --model sd3 --aspect 1:0 --resolution 480 --gpu h100
expect 2 "--batch: must be positive, got -1" -- --model flux --gpu h100 --batch -1
expect 2 "--vram-gib" -- --model flux --vram-gib nan
expect 2 "unknown command 'frobnicate'" -- frobnicate --model flux

# ---- outputs (issue 14): only regular files or new paths, modes kept, all files or none ----------
fixtures=$(cd "$(dirname "$0")/fixtures" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
check_that() {  # check_that DESCRIPTION COMMAND...: passes when COMMAND succeeds
  local what=$1; shift
  if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $what"; fi
}
# a failed write to stdout is an error, not exit 0
"$bin" --model wan14b --gpu l40s >/dev/full 2>"$tmp/err"; rc=$?
check_that "stdout to /dev/full exits 2 with a message (rc $rc)" \
  eval '[[ $rc -eq 2 ]] && grep -q "cannot write to standard output" "$tmp/err"'
# device-like targets are refused and left as they are: a FIFO, a directory, a symlink
mkfifo "$tmp/fifo"
expect 2 "cannot write '$tmp/fifo': it is a FIFO" -- --model flux --gpu l40s --plot "$tmp/fifo"
check_that "the FIFO is still a FIFO" test -p "$tmp/fifo"
expect 2 "it is a directory" -- --model flux --gpu l40s --plan-out "$tmp"
echo keep >"$tmp/real.svg"
ln -s "$tmp/real.svg" "$tmp/link.svg"
expect 2 "cannot write '$tmp/link.svg': it is a symbolic link" -- --model flux --gpu l40s --plot "$tmp/link.svg"
check_that "the symlink and its file are untouched" \
  eval '[[ -L $tmp/link.svg && $(cat "$tmp/real.svg") == keep ]]'
# mode 600 stays 600 (advise --plan-out and check --output)
: >"$tmp/plan.json"; chmod 600 "$tmp/plan.json"
expect 0 'Recommendation: ' -- --model flux --gpu l40s --plan-out "$tmp/plan.json"
check_that "plan file mode kept 600" eval '[[ $(stat -c %a "$tmp/plan.json") == 600 && -s $tmp/plan.json ]]'
: >"$tmp/config.json"; chmod 600 "$tmp/config.json"
expect 0 'Wrote ' -- check "$fixtures/check/flux-pixel-area-1024.json" --gpu h100 --emit simpletuner --output "$tmp/config.json"
check_that "config mode kept 600" eval '[[ $(stat -c %a "$tmp/config.json") == 600 && -s $tmp/config.json ]]'
# a valid 250-character file name works (the temporary name must fit NAME_MAX too)
long=$(printf 'p%.0s' {1..245}).json
expect 0 'Recommendation: ' -- --model flux --gpu l40s --plan-out "$tmp/$long"
check_that "250-character name written" test -s "$tmp/$long"
# all outputs of one command or none
expect 2 "cannot write '/nodir-segadvise/x.svg'" -- --model flux --gpu l40s --plan-out "$tmp/ok.json" --plot /nodir-segadvise/x.svg
check_that "no ok.json when --plot fails" test ! -e "$tmp/ok.json"
check_that "no temporary file left behind" eval '[[ -z $(find "$tmp" -name ".segadvise-*") ]]'

echo "$pass passed, $fail failed"
[[ $fail -eq 0 ]]
