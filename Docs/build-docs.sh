#!/usr/bin/env bash
# Builds the DocC documentation of DispatchStore, DispatchStoreJournal and DispatchStoreInspector, in
# one archive, with the toolchain alone: symbol graphs of the modules from `swift build`, the catalogs
# in Sources/DispatchStore/DispatchStore.docc, Sources/DispatchStoreJournal/DispatchStoreJournal.docc
# and Sources/DispatchStoreInspector/DispatchStoreInspector.docc plus the guides in Docs/ as articles
# (and their images), then `docc convert --warnings-as-errors`, so that a broken symbol link fails.
# (The guides' code runs in `python3 Docs/guides.py`; Docs/README.md, on writing guides, is not an
# article.)
#
#   bash Docs/build-docs.sh             builds .build-docs/DispatchStore.doccarchive
#   bash Docs/build-docs.sh --preview   the same, then serves it with `docc preview`
set -euo pipefail
cd "$(dirname "$0")/.."

scratch=.build-docs
graphs="$PWD/$scratch/symbol-graphs"
catalog="$scratch/DispatchStore.docc"
archive="$scratch/DispatchStore.doccarchive"

rm -rf "$catalog" "$archive"
mkdir -p "$graphs"
build_symbol_graphs() {
    # Building the inspector builds the journal and the core too, and each writes its graph.
    swift build --scratch-path "$scratch" --target DispatchStoreInspector \
        -Xswiftc -emit-symbol-graph -Xswiftc -emit-symbol-graph-dir -Xswiftc "$graphs"
}
build_symbol_graphs
if [[ ! -s "$graphs/DispatchStore.symbols.json" || ! -s "$graphs/DispatchStoreJournal.symbols.json" \
    || ! -s "$graphs/DispatchStoreInspector.symbols.json" ]]; then
    # A module was up to date, so the compiler wrote no graph: build it again from scratch.
    rm -rf "$scratch"
    mkdir -p "$graphs"
    build_symbol_graphs
fi

# One catalog for both modules, with each guide as an article: links to other guides become DocC
# links.
cp -R Sources/DispatchStore/DispatchStore.docc "$catalog"
cp Sources/DispatchStoreJournal/DispatchStoreJournal.docc/DispatchStoreJournal.md "$catalog/"
cp Sources/DispatchStoreJournal/DispatchStoreJournal.docc/Extensions/*.md "$catalog/Extensions/"
cp Sources/DispatchStoreInspector/DispatchStoreInspector.docc/DispatchStoreInspector.md "$catalog/"
cp Docs/*.png "$catalog/"
for guide in Docs/*.md; do
    if [[ "$guide" == Docs/README.md ]]; then continue; fi
    sed -E \
        -e 's/\]\(([A-Za-z]+)\.md\)/](doc:\1)/g' \
        -e '/^<!-- guide: .* -->$/d' \
        "$guide" > "$catalog/$(basename "$guide")"
done

docc convert "$catalog" \
    --additional-symbol-graph-dir "$graphs" \
    --fallback-display-name DispatchStore \
    --fallback-bundle-identifier org.swift.dispatchstore \
    --fallback-bundle-version 0.1.0 \
    --output-path "$archive" \
    --warnings-as-errors

echo "documentation: $archive"
if [[ "${1:-}" == "--preview" ]]; then
    docc preview "$catalog" --additional-symbol-graph-dir "$graphs" \
        --fallback-display-name DispatchStore --fallback-bundle-identifier org.swift.dispatchstore \
        --fallback-bundle-version 0.1.0
fi
