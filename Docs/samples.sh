#!/usr/bin/env bash
# Keeps the code blocks of README.md and the guides in Docs/ identical to the samples in
# Docs/Samples, which the DocSamples test target compiles and runs.
#
# In a guide, a block preceded by `<!-- sample: FILE#NAME -->` holds the lines of Docs/Samples/FILE
# between `// sample: NAME` and `// end-sample`, with their common indentation removed; lines
# ending with `// hidden` (what the tests need, not the reader) are left out.
#
#   bash Docs/samples.sh           rewrite the blocks from the samples
#   bash Docs/samples.sh --check   fail, showing the difference, when a block is out of date
set -euo pipefail
cd "$(dirname "$0")/.."

check=false
if [[ "${1:-}" == "--check" ]]; then check=true; fi

status=0
for guide in README.md Docs/*.md; do
    generated="$(mktemp)"
    awk -v samples="Docs/Samples" -v guide="$guide" '
        function snippet(file, name,    path, line, inside, found, count, i, indent, min, text) {
            path = samples "/" file
            inside = 0; found = 0; count = 0
            while ((getline line < path) > 0) {
                if (line ~ "^[ \t]*// sample: " name "$") { inside = 1; found = 1; continue }
                if (inside && line ~ /^[ \t]*\/\/ end-sample$/) { inside = 0; continue }
                if (inside && line !~ /\/\/ hidden$/) { lines[++count] = line }
            }
            close(path)
            if (!found) {
                printf "%s: no sample \"%s\" in %s\n", guide, name, path > "/dev/stderr"
                failed = 1
                return ""
            }
            min = -1
            for (i = 1; i <= count; i++) {
                if (lines[i] ~ /^[ \t]*$/) continue
                match(lines[i], /^ */)
                if (min < 0 || RLENGTH < min) min = RLENGTH
            }
            text = ""
            for (i = 1; i <= count; i++) {
                text = text (lines[i] ~ /^[ \t]*$/ ? "" : substr(lines[i], min + 1)) "\n"
            }
            return text
        }
        pending != "" && /^```/ {
            print
            printf "%s", snippet(pendingFile, pending)
            pending = ""; skipping = 1
            next
        }
        skipping && /^```/ { skipping = 0; print; next }
        skipping { next }
        /^<!-- sample: [^ ]+#[A-Za-z0-9_-]+ -->$/ {
            split(substr($3, 1), parts, "#")
            pendingFile = parts[1]; pending = parts[2]
            print
            next
        }
        { print }
        END { if (failed) exit 2 }
    ' "$guide" > "$generated" || { status=1; rm -f "$generated"; continue; }
    if $check; then
        if ! diff -u "$guide" "$generated"; then
            echo "$guide: code blocks differ from Docs/Samples; run bash Docs/samples.sh" >&2
            status=1
        fi
        rm -f "$generated"
    elif ! cmp -s "$guide" "$generated"; then
        mv "$generated" "$guide"
        echo "updated $guide"
    else
        rm -f "$generated"
    fi
done
exit $status
