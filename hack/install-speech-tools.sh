#!/usr/bin/env bash
# Installs the local speech engine and the audio tools (Debian packages, as root):
#   pocketsphinx + pocketsphinx-en-us  the default local speech-to-text engine (CMU PocketSphinx,
#                                      US English model; pocketsphinx_continuous)
#   sox + libsox-fmt-mp3               resamples recordings (WAV in PCM, mu-law, a-law; MP3) to the
#                                      16 kHz mono 16-bit WAV it reads, and splits two-channel calls
#   opus-tools                         opusdec: Ogg Opus recordings to WAV for sox
#   festival + festvox-us-slt-hts      speaks the demo's callers (Festival with Debian's one English
#                                      HTS voice, cmu_us_slt_arctic_hts), which Vosk reads far
#                                      better than espeak-ng
#   festvox-kallpc16k                  the demo's agent (kal_diphone, male), so the sides differ
#   espeak-ng                          speaks scripts to WAV for tests and the benchmark, and the demo
#                                      where Festival is missing
#   pocketsphinx-testdata              human recordings with transcriptions for the benchmark
# and then, through hack/install-vosk.sh, the default local engine Vosk under $SWITCHBOARD_CACHE.
# Idempotent and quick when everything is there. Tests that need these skip without them.
set -euo pipefail
log() { echo "install-speech-tools: $*" >&2; }
need=()
command -v pocketsphinx_continuous >/dev/null 2>&1 || need+=(pocketsphinx)
[[ -d /usr/share/pocketsphinx/model/en-us ]] || need+=(pocketsphinx-en-us)
command -v sox >/dev/null 2>&1 || need+=(sox libsox-fmt-base)
dpkg-query -W -f='${Status}' libsox-fmt-mp3 2>/dev/null | grep -q 'ok installed' || need+=(libsox-fmt-mp3)
command -v opusdec >/dev/null 2>&1 || need+=(opus-tools)
command -v espeak-ng >/dev/null 2>&1 || need+=(espeak-ng)
command -v text2wave >/dev/null 2>&1 || need+=(festival)
[[ -d /usr/share/festival/voices/us/cmu_us_slt_arctic_hts ]] || need+=(festvox-us-slt-hts)
[[ -d /usr/share/festival/voices/english/kal_diphone ]] || need+=(festvox-kallpc16k)
[[ -d /usr/share/pocketsphinx/test/data/librivox ]] || need+=(pocketsphinx-testdata)
if [[ ${#need[@]} -gt 0 ]]; then
  if [[ $(id -u) -ne 0 ]]; then
    log "need root to install ${need[*]}; install them and re-run"; exit 1
  fi
  log "installing ${need[*]} with apt-get (first run only)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
fi
"$(dirname "${BASH_SOURCE[0]}")/install-vosk.sh" >/dev/null || { log "Vosk not installed: the vosk engine and its tests need hack/install-vosk.sh"; exit 1; }
