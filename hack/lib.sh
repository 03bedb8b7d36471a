# Shell functions the scripts in hack/ share. Source it (". "$(dirname "$0")/lib.sh"); it only defines
# functions.

# begin_build DIR sets tmp to a new directory inside DIR, the cache the build fills, so that moving a
# built file into place is an atomic rename on one filesystem; the directory is removed when the script
# exits, and an interrupt exits with 130. It first removes what builds stopped without their EXIT trap (a
# machine restart) left in DIR: the .build.<pid>.* directories whose build no longer runs.
begin_build() {
	local dir="$1" old pid
	mkdir -p "$dir"
	for old in "$dir"/.build.*.*; do
		pid="${old#"$dir"/.build.}"
		pid="${pid%%.*}"
		if [[ -d "$old" && "$pid" =~ ^[0-9]+$ && ! -d "/proc/$pid" ]]; then rm -rf "$old"; fi
	done
	tmp="$(mktemp -d "$dir/.build.$$.XXXXXX")"
	trap 'rm -rf "$tmp"' EXIT
	trap 'exit 130' INT TERM
}
