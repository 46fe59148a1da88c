#!/usr/bin/env bash
# Seed corpora of the fuzz targets that take transcripts or a dedup store
# (record_replay, pipeline, expand), made from the captured fixtures: they
# are too big to commit (a 2.1.3xx transcript is ~150 KB). Run from
# anywhere; writes fuzz/corpus/<target>/ (git-ignored), one file per seed
# named by its SHA-1 (libFuzzer's naming, so reruns add no duplicates).
#
#   fuzz/seeds.sh [EXTRA_2.1.3xx_DIR...]
#
# EXTRA dirs (default: ../shared/corpora/claude-code-2.1.328 when present)
# add their transcripts to record_replay's seeds.
set -euo pipefail
cd "$(dirname "$0")/.."
F=tests/fixtures
C=fuzz/corpus
mkdir -p "$C/record_replay" "$C/pipeline" "$C/expand"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# seed TARGET FILE: add FILE's bytes to TARGET's corpus.
seed() {
  cp "$2" "$C/$1/$(sha1sum "$2" | cut -c1-40)"
}

# session FILE OUT [HEADER]: the session of main transcript FILE (with its
# <sid>/subagents/agent-*.jsonl, each after a "\n\x1eagent-<id>\n" line, as
# fuzz_targets/common.rs splits them) in OUT, after HEADER (octal escape).
session() {
  local main=$1 out=$2 header=${3:-}
  printf "$header" > "$out"
  cat "$main" >> "$out"
  local subs="${main%.jsonl}/subagents"
  if [ -d "$subs" ]; then
    for a in $(find "$subs" -maxdepth 1 -name 'agent-*.jsonl' | sort); do
      local id=$(basename "$a" .jsonl)
      printf '\n\036agent-%s\n' "${id#agent-}" >> "$out"
      cat "$a" >> "$out"
    done
  fi
}

# Main transcripts under DIR (not subagent files, not captures).
mains() {
  find "$@" -path '*/transcripts/*' -name '*.jsonl' -not -path '*/subagents/*' 2>/dev/null | sort
}

# record_replay: every 2.1.3xx session, as captured and shrunk.
extra=("$@")
if [ ${#extra[@]} -eq 0 ] && [ -d ../shared/corpora/claude-code-2.1.328 ]; then
  extra=(../shared/corpora/claude-code-2.1.328)
fi
n=0
for t in $(mains $F/cc-2.1.328 $F/cc-2.1.332 $F/shapes/cc-2.1.328 $F/shapes/cc-2.1.332 "${extra[@]}"); do
  session "$t" "$tmp/s"
  seed record_replay "$tmp/s"
  # The same session small (fuzz/shrink.py): many more runs per second.
  python3 fuzz/shrink.py < "$tmp/s" > "$tmp/small"
  seed record_replay "$tmp/small"
  n=$((n + 1))
done
echo "record_replay: $n transcripts, $(ls $C/record_replay | wc -l) seeds"

# pipeline: the first byte picks the setup (fuzz_targets/pipeline.rs):
# 4 × the profile's index (0 cc-2.1.328, 1 seed, 2 cc-2.0.77, 3 cc-1.0.128,
# 4 cc-2.1.88), so each release's transcripts get its own profile.
n=0
for spec in "cc-2.0.77:\\010" "cc-1.0.128:\\014" "cc-2.1.88:\\020" "shapes/cc-2.1.88:\\020"; do
  dir=${spec%%:*} header=${spec#*:}
  for t in $(mains $F/$dir); do
    session "$t" "$tmp/s" "$header"
    seed pipeline "$tmp/s"
    n=$((n + 1))
  done
done
echo "pipeline: $n transcripts, $(ls $C/pipeline | wc -l) seeds"

# expand: stores written by `ctxasm assemble --format dedup` (records, the
# pipeline, 1.0.128's lead params), their files joined by "\n\x1c\x1c\n".
cargo build --release --quiet
bin=target/release/ctxasm
store() {
  local name=$1
  shift
  rm -rf "$tmp/$name"
  "$bin" assemble --format dedup -o "$tmp/$name" "$@" 2>/dev/null || true
  [ -f "$tmp/$name/manifest.json" ] || { echo "no store for $name" >&2; return; }
  {
    cat "$tmp/$name/manifest.json"
    printf '\n\034\034\n'
    cat "$tmp/$name/segments.bin"
    printf '\n\034\034\n'
    cat "$tmp/$name/recipes.jsonl"
  } > "$tmp/$name.seed"
  seed expand "$tmp/$name.seed"
}
store records-hello "$F/cc-2.1.328/hello/transcripts"
store records-parallel "$F/cc-2.1.328/parallel-tools/transcripts"
store records-subagent "$F/shapes/cc-2.1.328/subagent-bash/transcripts"
mkdir -p "$tmp/small-session"
python3 fuzz/shrink.py < "$(mains $F/cc-2.1.328/parallel-tools | head -1)" > "$tmp/small-session/s.jsonl"
store records-small "$tmp/small-session"
"$bin" profile extract "$F/cc-1.0.128/hello/wire.jsonl" --env "$F/cc-1.0.128/hello/env" -o "$tmp/p1.json" 2>/dev/null
store pipeline-1.0.128 "$F/cc-1.0.128/resume-multi-prompt/transcripts" --mode pipeline --profile "$tmp/p1.json"
store pipeline-2.1.88 "$F/cc-2.1.88/bash-tool/transcripts" --mode pipeline --profile seed
echo "expand: $(ls $C/expand | wc -l) seeds"
