# Sourced by scripts/setup_harnesses.sh and scripts/setup_autoevals.sh (not run on its own).
#
# harness_venv DIR "PINS": DIR (relative to the checkout) becomes a virtual environment of its own holding PINS and
# this checkout, installed editable (editable_mode=compat) with its dependencies, in one resolution. It never sees
# the packages of the environment that runs this (no --system-site-packages): made from a bare interpreter or
# inside the user's venv, it is the same.
# Idempotent: a venv whose stamp (pins, this checkout's path, a hash of pyproject.toml) is current and whose
# installed versions are the pinned ones is left alone (a fraction of a second); a changed pyproject.toml reinstalls
# into the same venv (about 10 s); a venv without a stamp (new, or an install that did not finish) is made anew.
harness_venv() {
    local dir="$1" pins="$2"
    local root="$PWD" venv="$PWD/$1" stamp
    stamp="pins: $pins; checkout: $root; pyproject: $(sha256sum pyproject.toml | cut -d' ' -f1)"
    if [ -x "$venv/bin/python" ] && [ -f "$venv/.scorers-stamp" ] && [ "$(cat "$venv/.scorers-stamp")" = "$stamp" ] \
       && "$venv/bin/python" - $pins <<'PY'
import sys
from importlib.metadata import PackageNotFoundError, version
def installed(name):
    try:
        return version(name)
    except PackageNotFoundError:
        return None
sys.exit(any(installed(pin.split("==")[0]) != pin.split("==")[1] for pin in sys.argv[1:]))
PY
    then
        return 0
    fi
    echo "  installing $pins into $dir" >&2
    if [ ! -f "$venv/.scorers-stamp" ] || [ ! -x "$venv/bin/python" ]; then
        python -m venv --clear "$venv"
    fi
    rm -f "$venv/.scorers-stamp"
    # shellcheck disable=SC2086
    nice "$venv/bin/python" -m pip install -q --disable-pip-version-check $pins -e "$root" \
        --config-settings editable_mode=compat
    printf '%s' "$stamp" > "$venv/.scorers-stamp"
}
