# Decodes a 16-bit mono WAV with Vosk and prints one JSON object: {"words": [{"start", "end",
# "word"}]}, every word Vosk recognises with its times in seconds, in order (the service splits
# them into segments). Arguments: model directory, WAV file.
# libvosk.so comes from the vosk wheel and is loaded with ctypes, so the venv needs nothing else.
import ctypes
import importlib.util
import json
import os
import sys
import wave

model_dir, wav_path = sys.argv[1], sys.argv[2]
spec = importlib.util.find_spec("vosk")
if spec is None or not spec.submodule_search_locations:
    sys.exit("the vosk wheel is not installed in this Python (hack/install-vosk.sh)")
lib = ctypes.CDLL(os.path.join(list(spec.submodule_search_locations)[0], "libvosk.so"))
lib.vosk_set_log_level.argtypes = [ctypes.c_int]
lib.vosk_model_new.restype = ctypes.c_void_p
lib.vosk_model_new.argtypes = [ctypes.c_char_p]
lib.vosk_recognizer_new.restype = ctypes.c_void_p
lib.vosk_recognizer_new.argtypes = [ctypes.c_void_p, ctypes.c_float]
lib.vosk_recognizer_set_words.argtypes = [ctypes.c_void_p, ctypes.c_int]
lib.vosk_recognizer_accept_waveform.restype = ctypes.c_int
lib.vosk_recognizer_accept_waveform.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
lib.vosk_recognizer_result.restype = ctypes.c_char_p
lib.vosk_recognizer_result.argtypes = [ctypes.c_void_p]
lib.vosk_recognizer_final_result.restype = ctypes.c_char_p
lib.vosk_recognizer_final_result.argtypes = [ctypes.c_void_p]

lib.vosk_set_log_level(-1)
model = lib.vosk_model_new(model_dir.encode())
if not model:
    sys.exit("cannot load the Vosk model from " + model_dir)

words = []


def add(result):
    for w in json.loads(result.decode()).get("result") or []:
        words.append({"start": w["start"], "end": w["end"], "word": w["word"]})


with wave.open(wav_path, "rb") as w:
    if w.getnchannels() != 1 or w.getsampwidth() != 2:
        sys.exit("want 16-bit mono audio")
    rec = lib.vosk_recognizer_new(model, float(w.getframerate()))
    lib.vosk_recognizer_set_words(rec, 1)
    while True:
        data = w.readframes(4000)
        if not data:
            break
        if lib.vosk_recognizer_accept_waveform(rec, data, len(data)):
            add(lib.vosk_recognizer_result(rec))
    add(lib.vosk_recognizer_final_result(rec))
json.dump({"words": words}, sys.stdout)
