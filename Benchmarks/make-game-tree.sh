#!/bin/sh
# Writes make bench-pack's real-game tree (BENCH_TREE=game): Battle for Wesnoth 1.16's data from
# Debian's wesnoth-1.16-data package (GPL-2+), ~40 MB in 8,662 files: 6.7 MB of WML .cfg, Lua,
# maps and other text; 30.5 MB of PNG, JPEG and Ogg; 3.3 MB of WAV and the rest. The package's
# data/ folder, without data/core/images/{portraits,terrain,maps} (111 MB more of PNG alone, which
# only lengthens the runs) and without the font symlinks that point into other packages.
# Skipped when DIR already holds it. usage: make-game-tree.sh DIR
set -eu
dir=$1
[ -e "$dir/.complete" ] && exit 0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
# apt-get download runs as the user _apt where it can; a root-owned temporary folder is not
# writable for it, which apt only warns about.
apt-get download wesnoth-1.16-data || {
    echo "make-game-tree.sh: cannot download wesnoth-1.16-data (run apt-get update first)" >&2
    exit 1
}
dpkg -x wesnoth-1.16-data_*.deb x
cd - >/dev/null
rm -rf "$dir"
mkdir -p "$dir"
cp -a "$work/x/usr/share/games/wesnoth/1.16/data" "$dir/"
rm -rf "$dir/data/core/images/portraits" "$dir/data/core/images/terrain" "$dir/data/core/images/maps"
find "$dir" -xtype l -delete
touch "$dir/.complete"
