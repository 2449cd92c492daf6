#!/usr/bin/env bash
# release.sh: the release archives of hermes, built from the commit checked
# out (HEAD), never from uncommitted changes.
#
#   scripts/release.sh VERSION [OUTDIR]    (default dist/)
#
# VERSION is the release's tag, v1.2.3 or 1.2.3 (a suffix such as -rc.1 is
# kept). OUTDIR receives, for each platform, hermes_VERSION_OS_ARCH.tar.gz
# holding the binary, README.md, LICENSE, CHANGELOG.md and the man page
# hermes.1, and SHA256SUMS over the archives.
#
# Reproducible: two runs on the same commit give the same bytes. The build
# is scripts/build.sh's (static, -trimpath, no doc renderers) from a clean
# clone of HEAD, so no path, user or uncommitted file of this machine gets
# in; the binary's date is the commit's (Go's build information); the
# archives' entries carry the commit's time, owner 0 and a fixed order, and
# gzip stores no name or time.
#
# The macOS binaries are pure Go (CGO_ENABLED=0), linked here with the
# ad-hoc signature Go's linker gives every darwin binary, which is a hash of
# the bytes and so as reproducible as they are; they are not signed with an
# Apple developer identity nor notarized (README, "macOS and FreeBSD").
set -euo pipefail
cd "$(dirname "$0")/.."

if (($# < 1 || $# > 2)); then
  echo "usage: scripts/release.sh VERSION [OUTDIR]" >&2
  exit 2
fi
version=${1#v}
if ! [[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
  echo "release.sh: version \"$1\" is not of the form 1.2.3 or v1.2.3" >&2
  exit 2
fi
version=v$version
out=${2:-dist}
platforms=(linux/amd64 linux/arm64 darwin/amd64 darwin/arm64)

src=$(mktemp -d)
trap 'rm -rf "$src"' EXIT
git clone -q --no-hardlinks . "$src/hermes"
commit_time=$(git -C "$src/hermes" log -1 --format=%ct)

mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out"/hermes_"$version"_*.tar.gz "$out/SHA256SUMS"

for p in "${platforms[@]}"; do
  os=${p%/*} arch=${p#*/}
  name=hermes_${version}_${os}_${arch}
  echo "release.sh: building $os/$arch" >&2
  stage=$src/stage/$name
  mkdir -p "$stage"
  (cd "$src/hermes" && GOOS=$os GOARCH=$arch CGO_ENABLED=0 go build -trimpath -buildvcs=true \
    -tags urfave_cli_no_docs -ldflags "-X github.com/hermes/hermes/cmd.Version=$version" \
    -o "$stage/hermes" .)
  cp "$src/hermes"/{README.md,LICENSE,CHANGELOG.md} "$stage/"
done

# The man page comes from a binary this machine runs; its date is the
# commit's, its text the same on every platform.
echo "release.sh: the man page, then the archives in $out" >&2
host=$src/host-hermes
(cd "$src/hermes" && CGO_ENABLED=0 go build -trimpath -buildvcs=true -tags urfave_cli_no_docs \
  -ldflags "-X github.com/hermes/hermes/cmd.Version=$version" -o "$host" .)
"$host" man >"$src/hermes.1"

for p in "${platforms[@]}"; do
  name=hermes_${version}_${p%/*}_${p#*/}
  cp "$src/hermes.1" "$src/stage/$name/"
  chmod 0755 "$src/stage/$name" "$src/stage/$name/hermes"
  chmod 0644 "$src/stage/$name"/{README.md,LICENSE,CHANGELOG.md,hermes.1}
  tar -C "$src/stage" --sort=name --mtime="@$commit_time" --owner=0 --group=0 --numeric-owner \
    --format=gnu -cf - "$name" | gzip -n -9 >"$out/$name.tar.gz"
done

(cd "$out" && sha256sum hermes_"$version"_*.tar.gz >SHA256SUMS)
cat "$out/SHA256SUMS"
