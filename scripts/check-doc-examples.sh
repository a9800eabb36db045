#!/usr/bin/env bash
# Every Swift code block a user would copy from README.md or a DocC article is compiled code
# (issue 46, item 6). Run by .ci/run before the build; fails on the first drift it finds.
#
# The examples live as SwiftPM snippets in Snippets/ (executables `swift build` compiles and
# nothing runs; `// snippet.hide` ... `// snippet.show` around the setup a reader would not
# copy). DocC articles include them with `@Snippet(path: "PinStore/Snippets/<Name>")`, so an
# article's code is the compiled file itself. README.md cannot include a file: each of its
# ```swift blocks is preceded by a marker naming what it shows, and this script checks it:
#
#   <!-- example: Snippets/Name.swift -->         the block is the snippet's shown part
#   <!-- example: Snippets/Name.swift#slice -->   ... or one of its `// snippet.<slice>` slices
#   <!-- example: Tests/Target/File.swift -->     the block is, line for line, in that file
#                                                 (test code the suite compiles and runs)
#   <!-- example: not compiled (why) -->          not Swift a user compiles (Package.swift
#                                                 lines): each `.product(name:package: "pinstore")`
#                                                 it names must be a product of Package.swift
#
# The same markers work in the articles, for test code that cannot be a snippet. What is
# checked: every ```swift block of README.md and Sources/*/Docs.docc/*.md has a marker and
# matches it (indentation aside); every @Snippet names a file in Snippets/; every snippet is
# shown somewhere. Whether the snippets compile is `swift build`'s part (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."

status=0
fail() { echo "error: $*" >&2; status=1; }

# The lines a reader sees of a snippet ($1), or of its slice $2: what swift-docc-plugin's
# snippet-extract keeps (no leading comment, no hidden lines, no marker lines), re-indented.
shown() {
    awk -v want="$2" '
        function marker(line,   m) {
            if (match(line, /^[ \t]*\/\/[ \t]*snippet\.[^ \t]+/)) {
                m = substr(line, RSTART, RLENGTH); sub(/^[ \t]*\/\/[ \t]*snippet\./, "", m); return m
            }
            return ""
        }
        BEGIN { visible = 1; n = 0; started = 0; explaining = 1 }
        {
            line = $0
            if (!started && line ~ /^[ \t]*$/) next
            started = 1
            if (explaining) {
                if (line ~ /^[ \t]*\/\// && marker(line) == "") next
                explaining = 0
            }
            m = marker(line)
            if (m == "hide") { visible = 0; next }
            if (m == "show") { visible = 1; next }
            if (m == "end") { if (slicing) { slicing = 0; stop[slice] = n } ; next }
            if (m != "") { if (visible) { slice = m; slicing = 1; start[m] = n + 1 } ; next }
            if (visible && !(n == 0 && line ~ /^[ \t]*$/)) lines[++n] = line
        }
        END {
            if (slicing) stop[slice] = n
            first = 1; last = n
            if (want != "") {
                if (!(want in start)) { print "__NO_SUCH_SLICE__"; exit }
                first = start[want]; last = stop[want]
            }
            for (i = first; i <= last; i++) print lines[i]
        }' "$1"
}

# Its input without leading and trailing blank lines, less the indentation all lines share.
normalize() {
    awk '
        { lines[NR] = $0 }
        END {
            first = 1; while (first <= NR && lines[first] ~ /^[ \t]*$/) first++
            last = NR; while (last >= first && lines[last] ~ /^[ \t]*$/) last--
            indent = -1
            for (i = first; i <= last; i++) {
                if (lines[i] ~ /^[ \t]*$/) continue
                match(lines[i], /^ */); if (indent < 0 || RLENGTH < indent) indent = RLENGTH
            }
            for (i = first; i <= last; i++) {
                line = lines[i]; if (line ~ /^[ \t]*$/) line = ""; else line = substr(line, indent + 1)
                sub(/[ \t]+$/, "", line); print line
            }
        }'
}

# Whether the (normalized) block $1 appears, line for line, in file $2.
contained() {
    awk -v blockfile="$1" '
        BEGIN { while ((getline l < blockfile) > 0) block[++b] = l }
        { file[NR] = $0 }
        END {
            for (s = 1; s + b - 1 <= NR; s++) {
                indent = -1
                for (i = 0; i < b; i++) {
                    if (file[s + i] ~ /^[ \t]*$/) continue
                    match(file[s + i], /^ */); if (indent < 0 || RLENGTH < indent) indent = RLENGTH
                }
                ok = 1
                for (i = 0; i < b && ok; i++) {
                    line = file[s + i]; if (line ~ /^[ \t]*$/) line = ""; else line = substr(line, indent + 1)
                    sub(/[ \t]+$/, "", line)
                    if (line != block[i + 1]) ok = 0
                }
                if (ok) exit 0
            }
            exit 1
        }' "$2"
}

products=$(grep -o '\.library(name: "[A-Za-z]*"' Package.swift | sed 's/.*"\(.*\)"/\1/')

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
used="$work/used"
: > "$used"

docs=(README.md Sources/*/Docs.docc/*.md)
blocks=0
for doc in "${docs[@]}"; do
    # Each ```swift block as: its line number, its marker (or "-"), then its lines, into files.
    rm -f "$work"/block.*
    awk -v out="$work/block" '
        /^[ \t]*```swift[ \t]*$/ {
            inside = 1; count++; file = out "." count
            print NR > (file ".line"); print (previous ~ /<!-- example: .* -->/ ? previous : "-") > (file ".marker")
            printf "" > file
            next
        }
        inside && /^[ \t]*```[ \t]*$/ { inside = 0; close(file); next }
        inside { print >> file; next }
        /[^ \t]/ { previous = $0 }
        /@Snippet\(/ { print FILENAME ":" NR ":" $0 > (out ".directives") }
    ' "$doc"

    if [ -f "$work/block.directives" ]; then
        while IFS= read -r directive; do
            path=$(sed -n 's/.*@Snippet(path: *"PinStore\/\(Snippets\/[^"]*\)".*/\1/p' <<<"$directive")
            slice=$(sed -n 's/.*slice: *"\([^"]*\)".*/\1/p' <<<"$directive")
            if [ -z "$path" ]; then
                fail "${directive%%:@*}: a @Snippet path must read \"PinStore/Snippets/<Name>\""
            elif [ ! -f "$path.swift" ]; then
                fail "${directive%%:@*}: no snippet $path.swift"
            else
                echo "$path.swift" >> "$used"
                if [ -n "$slice" ] && [ "$(shown "$path.swift" "$slice")" = "__NO_SUCH_SLICE__" ]; then
                    fail "${directive%%:@*}: $path.swift has no slice \"$slice\""
                fi
            fi
        done < "$work/block.directives"
    fi

    for block in "$work"/block.[0-9]*; do
        case "$block" in *.line|*.marker) continue ;; esac
        [ -f "$block" ] || continue
        blocks=$((blocks + 1))
        at="$doc:$(cat "$block.line")"
        marker=$(cat "$block.marker")
        target=$(sed -n 's/.*<!-- example: \(.*\) -->.*/\1/p' <<<"$marker")
        normalize < "$block" > "$block.norm"
        case "$target" in
            "")
                fail "$at: a Swift block with no <!-- example: ... --> marker before it: make it a snippet (CONTRIBUTING.md, \"Examples\")" ;;
            "not compiled ("*")")
                for product in $(grep -o '\.product(name: "[A-Za-z]*", package: "pinstore")' "$block" | sed 's/.*name: "\([A-Za-z]*\)".*/\1/'); do
                    grep -qx "$product" <<<"$products" || fail "$at: no library product \"$product\" in Package.swift"
                done ;;
            "not compiled"*)
                fail "$at: say why a block is not compiled: <!-- example: not compiled (why) -->" ;;
            Snippets/*)
                file=${target%%#*}
                slice=""
                [ "$file" != "$target" ] && slice=${target#*#}
                if [ ! -f "$file" ]; then
                    fail "$at: no snippet $file"
                    continue
                fi
                echo "$file" >> "$used"
                shown "$file" "$slice" | normalize > "$block.expected"
                if ! diff -u "$block.expected" "$block.norm" > "$block.diff"; then
                    fail "$at: the block differs from the shown part of $target (- snippet, + document):"
                    sed 1,2d "$block.diff" >&2
                fi ;;
            *)
                if [ ! -f "$target" ]; then
                    fail "$at: no file $target"
                elif ! contained "$block.norm" "$target"; then
                    fail "$at: the block is not, line for line, in $target"
                fi ;;
        esac
    done
done

# README.md has Swift blocks: finding none means this script no longer reads it.
[ "$blocks" -gt 0 ] || fail "found no Swift block in README.md or the articles; is this script still reading them?"

for snippet in Snippets/*.swift; do
    grep -qx "$snippet" "$used" || fail "$snippet is shown by no document: include it (@Snippet) or delete it"
done

if [ "$status" -eq 0 ]; then
    echo "doc examples: $blocks marked Swift blocks and $(sort -u "$used" | wc -l) snippets checked"
fi
exit "$status"
