#!/usr/bin/env bash
# Builds and installs Postgres' pgvector extension (0.8.0) when the server
# lacks it: Debian bookworm packages none, so the source package comes from
# trixie's deb-src into a cache outside the clone, built against
# postgresql-server-dev-$PGVER. Nothing is committed or kept in the clone.
set -euo pipefail
CACHE="${AGENTRY_CI_CACHE:-$HOME/.cache/agentry-ci}/pgvector"
PGVER="$(ls /etc/postgresql | head -n1)"
if [ -f "/usr/share/postgresql/$PGVER/extension/vector.control" ]; then
	exit 0
fi
mkdir -p "$CACHE"
cd "$CACHE"
if [ ! -f pgvector_0.8.0.orig.tar.gz ]; then
	src=$(mktemp)
	# One-line format: apt reads Dir::Etc::sourcelist as a .list file (a
	# deb822 stanza there fails with "Type 'Types:' is not known").
	printf 'deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main\n' >"$src"
	opts=(-o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts=/dev/null -o "Dir::Etc::sourcelist=$src" -o "Dir::State::Lists=$CACHE/lists")
	mkdir -p "$CACHE/lists/partial"
	apt-get "${opts[@]}" update -q
	apt-get "${opts[@]}" source --download-only pgvector=0.8.0-1
	rm -f "$src"
fi
if ! command -v pg_config >/dev/null || [ ! -d "/usr/include/postgresql/$PGVER/server" ]; then
	apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "postgresql-server-dev-$PGVER"
fi
rm -rf build && mkdir build && tar xzf pgvector_0.8.0.orig.tar.gz -C build
# OPTFLAGS="" (no -march=native) keeps the build portable: the cache may
# outlive or move off this CPU, and a native build can die with SIGILL on
# an older one. It costs no SIMD where a query spends it: pgvector 0.8.0
# compiles its float distance functions with target_clones("default","fma")
# (a 256-bit AVX2+FMA loop chosen at load time on x86-64 with glibc) and its
# halfvec ones with an F16C/FMA path chosen at run time; -march=native would
# only widen the auto-vectorised loops (docs/benchmarks.md, i13-pgv).
make -C build/pgvector-0.8.0 -j2 OPTFLAGS="" >/dev/null
make -C build/pgvector-0.8.0 install >/dev/null
