#!/usr/bin/env bash
# Installs the Vosk speech engine (Alpha Cephei, Apache-2.0) under $SWITCHBOARD_CACHE:
#   the vosk wheel from PyPI (libvosk.so, the Kaldi-based recogniser) into a Python venv, and
#   the small US English model, published by the same authors on Maven Central as an Android
#   archive (its assets/model-en-us/ is the model directory).
# Both downloads are pinned and checked against the sha256 below. Idempotent: a second run only
# prints the paths. Prints VOSK_PYTHON=... and VOSK_MODEL=... on stdout (what
# --speech-engine=vosk uses by default).
set -euo pipefail
log() { echo "install-vosk: $*" >&2; }

VERSION=0.3.45
WHEEL=vosk-${VERSION}-py3-none-manylinux_2_12_x86_64.manylinux2010_x86_64.whl
WHEEL_SHA256=25e025093c4399d7278f543568ed8cc5460ac3a4bf48c23673ace1e25d26619f
MODEL_AAR=vosk-model-en-${VERSION}.aar
MODEL_URL=https://repo1.maven.org/maven2/com/alphacephei/vosk-model-en/${VERSION}/${MODEL_AAR}
MODEL_SHA256=8a5792fccaf873b4745dbd1b3fe19d8a77a15898e806674020eea820424771cd

cache=${SWITCHBOARD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/switchboard}
dir=$cache/vosk/$VERSION
python=$dir/venv/bin/python
model=$dir/model

if [[ $(uname -m) != x86_64 ]]; then
  log "the pinned wheel is for x86_64 Linux only"; exit 1
fi

verify() { # file sha256
  local got
  got=$(sha256sum "$1" | cut -d' ' -f1)
  if [[ $got != "$2" ]]; then
    log "$1: sha256 $got, want $2"; rm -f "$1"; exit 1
  fi
}

mkdir -p "$dir"
if [[ ! -x $python ]] || ! "$python" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("vosk") is None)' 2>/dev/null; then
  if ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
    if [[ $(id -u) -ne 0 ]]; then log "need python3-venv (apt-get install python3-venv) and re-run"; exit 1; fi
    log "installing python3-venv with apt-get"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv >&2
  fi
  log "downloading the vosk $VERSION wheel from PyPI"
  rm -rf "$dir/venv" "$dir/wheel"
  python3 -m pip download --quiet --no-deps --only-binary=:all: --platform manylinux2010_x86_64 \
    -d "$dir/wheel" "vosk==$VERSION" >&2
  verify "$dir/wheel/$WHEEL" "$WHEEL_SHA256"
  python3 -m venv "$dir/venv"
  # No dependencies: the engine loads libvosk.so with ctypes, so cffi, requests and tqdm
  # (the binding's and its model downloader's) are not needed.
  "$python" -m pip install --quiet --no-index --no-deps "$dir/wheel/$WHEEL" >&2
fi

if [[ ! -f $model/am/final.mdl ]]; then
  log "downloading the English model $VERSION from Maven Central (41 MB)"
  tmp=$(mktemp -d "$dir/model.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  curl -fsSL --retry 3 -o "$tmp/$MODEL_AAR" "$MODEL_URL"
  verify "$tmp/$MODEL_AAR" "$MODEL_SHA256"
  "$python" -m zipfile -e "$tmp/$MODEL_AAR" "$tmp/x"
  rm -rf "$model"
  mv "$tmp/x/assets/model-en-us" "$model"
fi

echo "VOSK_PYTHON=$python"
echo "VOSK_MODEL=$model"
