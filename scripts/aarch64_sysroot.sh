#!/usr/bin/env bash
# Assembles an arm64 (aarch64) sysroot from Debian's arm64 packages without
# installing any of them: a private apt configuration (its own lists, cache
# and an empty dpkg status, APT::Architecture=arm64) resolves and downloads
# the packages with their dependencies, and dpkg -x unpacks each into the
# sysroot. The host's dpkg database and its amd64 packages are not touched
# (no dpkg --add-architecture, nothing installed), so this is safe on a
# machine whose amd64 -dev packages others build against.
#   scripts/aarch64_sysroot.sh SYSROOT [extra arm64 packages...]
# Re-running with the same package list is a no-op (a stamp file records it).
set -euo pipefail

sysroot=${1:?usage: aarch64_sysroot.sh SYSROOT [packages...]}
shift
# The build's libraries (scripts/common.sh's -dev packages, arm64), libc's
# headers, and openmpi-bin for the arm64 mpirun / prte a singleton MPI_Init
# starts.
packages=(
  libc6-dev libopenblas-dev liblapacke-dev libfftw3-dev libsleef-dev
  libhwloc-dev libprotobuf-c-dev zlib1g-dev libcunit1-dev
  libopenmpi-dev openmpi-bin
  "$@"
)

mkdir -p "$sysroot"
sysroot=$(cd "$sysroot" && pwd)
stamp=$sysroot/.hl-sysroot-packages
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "${packages[*]}" ]; then
  exit 0
fi

apt_dir=$sysroot.apt
mkdir -p "$apt_dir"/{lists/partial,cache/archives/partial,etc/sources.list.d,etc/apt.conf.d,etc/preferences.d,state}
: > "$apt_dir/status"
# The host's Debian sources (deb.debian.org carries arm64); third-party
# sources are left out.
: > "$apt_dir/etc/sources.list"
[ -f /etc/apt/sources.list ] && grep -h '^deb .*debian' /etc/apt/sources.list >> "$apt_dir/etc/sources.list" || true
for f in /etc/apt/sources.list.d/*.sources; do
  [ -f "$f" ] && grep -q 'debian' "$f" && cp "$f" "$apt_dir/etc/sources.list.d/"
done
apt_opts=(
  -o Dir::Etc::SourceList="$apt_dir/etc/sources.list"
  -o Dir::Etc::SourceParts="$apt_dir/etc/sources.list.d"
  -o Dir::Etc::Parts="$apt_dir/etc/apt.conf.d"
  -o Dir::Etc::PreferencesParts="$apt_dir/etc/preferences.d"
  -o Dir::State="$apt_dir/state"
  -o Dir::State::Lists="$apt_dir/lists"
  -o Dir::State::status="$apt_dir/status"
  -o Dir::Cache="$apt_dir/cache"
  -o APT::Architecture=arm64
  -o APT::Architectures::=arm64
  -o APT::Install-Recommends=0
  -o Debug::NoLocking=1
)
# No network (or no Debian source) is an error, never a silent skip: the
# aarch64 build cannot go on without these packages.
download_failed() {
  printf 'error: aarch64_sysroot.sh: %s failed: cannot download Debian'"'"'s arm64 packages from %s.\n' \
    "$1" "$(cat "$apt_dir/etc/sources.list" "$apt_dir"/etc/sources.list.d/* 2>/dev/null |
            grep -E '^(deb|URIs:) ' | grep -o -E '[a-z]+://[^ ]+' | sort -u | paste -sd ' ')" >&2
  printf '  The aarch64 cross build needs network access to them (or a mirror in /etc/apt);\n' >&2
  printf '  offline, point HL_AARCH64_SYSROOT at a sysroot this script made earlier.\n' >&2
  exit 1
}
[ -s "$apt_dir/etc/sources.list" ] || ls "$apt_dir"/etc/sources.list.d/* >/dev/null 2>&1 ||
  download_failed "finding a Debian source in /etc/apt"
printf '==> %s\n' "arm64 package lists ($apt_dir)" >&2
apt-get "${apt_opts[@]}" -qq --error-on=any update || download_failed "apt-get update"
printf '==> %s\n' "downloading arm64: ${packages[*]} (and dependencies)" >&2
apt-get "${apt_opts[@]}" -qq -y --download-only install "${packages[@]}" >/dev/null ||
  download_failed "apt-get install --download-only"

printf '==> %s\n' "unpacking into $sysroot" >&2
for deb in "$apt_dir"/cache/archives/*.deb; do
  dpkg -x "$deb" "$sysroot"
done
# Debian 12 is merged-/usr: /lib, /bin, /sbin are links into /usr (made by
# base-files' maintainer scripts, which dpkg -x does not run).
for d in lib bin sbin; do
  if [ -d "$sysroot/$d" ] && [ ! -L "$sysroot/$d" ]; then
    mkdir -p "$sysroot/usr/$d"
    cp -a "$sysroot/$d/." "$sysroot/usr/$d/"
    rm -rf "${sysroot:?}/$d"
  fi
  [ -e "$sysroot/$d" ] || ln -s "usr/$d" "$sysroot/$d"
done
# update-alternatives links (postinst scripts do not run either): BLAS and
# LAPACK through OpenBLAS (its pthread build).
multi=usr/lib/aarch64-linux-gnu
for alt in libblas.so.3 libblas.so liblapack.so.3 liblapack.so libopenblas.so.0 libopenblas.so; do
  target=$(cd "$sysroot/$multi" && ls -d openblas-pthread/"$alt" 2>/dev/null || true)
  [ -n "$target" ] && ln -sfn "$target" "$sysroot/$multi/$alt"
done
inc=usr/include/aarch64-linux-gnu
for h in cblas.h f77blas.h openblas_config.h; do
  [ -f "$sysroot/$inc/openblas-pthread/$h" ] && ln -sfn "openblas-pthread/$h" "$sysroot/$inc/$h"
done
for pc in blas lapack; do
  [ -f "$sysroot/$multi/openblas-pthread/pkgconfig/$pc-openblas.pc" ] &&
    ln -sfn "../openblas-pthread/pkgconfig/$pc-openblas.pc" "$sysroot/$multi/pkgconfig/$pc.pc"
done
# Absolute links inside the sysroot point at the host's files: make them
# relative to the sysroot.
while IFS= read -r link; do
  target=$(readlink "$link")
  case $target in
    /etc/alternatives/*) continue ;;
  esac
  ln -sfnr "$sysroot$target" "$link"
done < <(find "$sysroot" -type l -lname '/*')
printf '%s' "${packages[*]}" > "$stamp"
printf '==> %s\n' "sysroot ready: $sysroot" >&2
