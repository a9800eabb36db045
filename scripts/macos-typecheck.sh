#!/usr/bin/env bash
# Type-checks the macOS view of the package on Linux, where no Mac is at hand: every `#if`
# resolved as a Mac resolves it, each Swift target compiled with SwiftPM's own command against
# stub Darwin/Security modules that carry Apple's signatures (scripts/macos-typecheck/).
# Fails on any compiler error and on any Glibc-only name left in the macOS view.
#
#   scripts/macos-typecheck.sh          # after (or it runs) `swift build --build-tests`
#
# What it cannot see: the dependencies' own macOS code (they are used as built for Linux),
# linking, and anything at run time. The macOS job of .github/workflows/ci.yml does those.
set -euo pipefail
cd "$(dirname "$0")/.."
package=$PWD

# SwiftPM's build description and the Linux modules of the dependencies (incremental: a no-op
# after `swift test`).
work=$package/.build/macos-typecheck
mkdir -p "$work/stubs" "$work/tool"
swift build --build-tests > "$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
bin=$(swift build --build-tests --show-bin-path)
description=$(dirname "$(dirname "$bin")")/debug.yaml

# The toolchain's own swift-syntax (the compiler's #if evaluator), shipped for macro plugins.
swiftc_path=$(command -v swiftc)
toolchain=$(dirname "$(dirname "$(readlink -f "$swiftc_path")")")
host=$toolchain/lib/swift/host
if [ ! -f "$host/SwiftIfConfig.swiftmodule" ] && [ ! -d "$host/SwiftIfConfig.swiftmodule" ]; then
    echo "error: this toolchain has no SwiftIfConfig in $host; the macOS type-check needs Swift 6.0 or later" >&2
    exit 1
fi

# The tool and the stubs are rebuilt only when their sources change.
here=$package/scripts/macos-typecheck
stamp=$(cat "$here"/*.swift "$here"/stubs/*.swift | sha256sum | cut -c1-16)
if [ "$(cat "$work/stamp" 2>/dev/null)" != "$stamp" ] || [ ! -x "$work/tool/macos-typecheck" ]; then
    swiftc -O -I "$host" -L "$host" -lSwiftIfConfig -lSwiftParser -lSwiftSyntax -lSwiftDiagnostics -lSwiftOperators \
        -Xlinker -rpath -Xlinker "$host" "$here/main.swift" "$here/MacOSView.swift" -o "$work/tool/macos-typecheck"
    rm -rf "$work/stubs" && mkdir -p "$work/stubs"
    # The order is the stubs' own dependency order.
    for stub in _DarwinStubTypes Darwin Security _MacOSFoundation; do
        swiftc -parse-as-library -module-name "$stub" -I "$work/stubs" -emit-module \
            -emit-module-path "$work/stubs/$stub.swiftmodule" "$here/stubs/$stub.swift"
    done
    echo "$stamp" > "$work/stamp"
fi

"$work/tool/macos-typecheck" --package "$package" --build-description "$description" \
    --stubs "$work/stubs" --work "$work"
