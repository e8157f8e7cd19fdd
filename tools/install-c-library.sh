#!/usr/bin/env sh
# Installs the C library that `cargo build --release` made (target/release/libgkfda.so and
# libgkfda.a), its header and a pkg-config file under PREFIX, so that a C program builds with
# `cc app.c $(pkg-config --cflags --libs gkfda)` once PKG_CONFIG_PATH names PREFIX/lib/pkgconfig.
# A few lines of install(1) rather than cargo-c: the crate has one library and one header.
set -eu
prefix=${1:?usage: tools/install-c-library.sh PREFIX (after cargo build --release)}
root=$(cd "$(dirname "$0")/.." && pwd)
for artefact in libgkfda.so libgkfda.a; do
    if [ ! -f "$root/target/release/$artefact" ]; then
        echo "install-c-library: target/release/$artefact is missing; run cargo build --release first" >&2
        exit 1
    fi
done
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/Cargo.toml" | head -n 1)
mkdir -p "$prefix"
prefix=$(cd "$prefix" && pwd)
install -d "$prefix/include" "$prefix/lib/pkgconfig"
install -m 644 "$root/include/gkfda.h" "$prefix/include/gkfda.h"
install -m 755 "$root/target/release/libgkfda.so" "$prefix/lib/libgkfda.so"
install -m 644 "$root/target/release/libgkfda.a" "$prefix/lib/libgkfda.a"
sed -e "s|@PREFIX@|$prefix|" -e "s|@VERSION@|$version|" "$root/include/gkfda.pc.in" \
    > "$prefix/lib/pkgconfig/gkfda.pc"
echo "installed gkfda $version under $prefix"
