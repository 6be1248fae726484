# Copyright 2026 The zero3 Authors.
"""Tokenizes fine-tuning JSONL for zero3 with the model's own tokenizer.

The library behind tools/data/prepare. It reads one JSON object per line in
one of TRL's SFTTrainer dataset formats, tokenizes it with the model's
Hugging Face tokenizer and chat template (transformers.AutoTokenizer, no
torch), and writes, for an output prefix PREFIX:

  PREFIX.bin, PREFIX.idx   Megatron-LM's indexed dataset ("MMIDIDX" version 1,
                           core/model/megatron_index.h): one sequence and one
                           document per example, in input order.
  PREFIX.loss_mask.bin     one uint8 (0 or 1) per token of PREFIX.bin, in the
                           same order.
  PREFIX.json              what was done: versions, hashes of the tokenizer
                           and chat template, format, counts, dtype.

The loss mask convention: mask[j] == 1 means token j is *predicted*, i.e.
token j is a target the loss counts. The prediction made at position j (from
tokens ..j) has token j + 1 as its target, so a trainer counts that
prediction's loss when mask[j + 1] == 1. The mask never says anything about
inputs: every token is always an input.

Formats (TRL's SFTTrainer conventions):

  messages           {"messages": [{"role": ..., "content": ...}, ...]}.
                     ids = tokenizer.apply_chat_template(messages,
                     tokenize=True). The tokens of assistant message i are
                     those between the rendering of messages[:i] with
                     add_generation_prompt=True and the rendering of
                     messages[:i + 1]: the assistant's content and whatever
                     the template closes its turn with (e.g. "<|im_end|>"
                     and a newline for ChatML, "<|eot_id|>" for Llama 3).
                     Only those are predicted. Each prefix rendering must
                     be a prefix of the whole conversation's ids, or the
                     line is refused.
  prompt_completion  {"prompt": ..., "completion": ...}, both strings or both
                     message lists. Strings, as TRL's SFTTrainer does it: the
                     tokenizer's EOS token text is appended to the completion
                     unless it already ends with it; ids = tokenizer(prompt +
                     completion) with the tokenizer's default special tokens
                     (e.g. a BOS), and the first len(tokenizer(prompt)) ids
                     are not predicted, all after them are. Message lists:
                     ids = apply_chat_template(prompt + completion); the
                     first len(apply_chat_template(prompt,
                     add_generation_prompt=True)) ids are not predicted.
  text               {"text": ...}. ids = tokenizer(text) with the default
                     special tokens, and the EOS id appended unless it is
                     already last; every token is predicted.

An optional "tools" key (a list of JSON schemas, or a string holding one) is
passed to the chat template, as TRL does.
"""

from __future__ import annotations

import argparse
import array
import collections
import dataclasses
import gzip
import hashlib
import json
import math
import os
import secrets
import signal
import struct
import sys
import time
from typing import Any, BinaryIO, Iterator

TOOL_NAME = "tools/data/prepare"
TOOL_VERSION = "1.0.0"

FORMATS = ("messages", "prompt_completion", "text")
ROLES = ("assistant", "system", "tool", "user")

EXIT_OK = 0
EXIT_ERROR = 2
EXIT_SIGINT = 130
EXIT_SIGTERM = 143

# Megatron-LM's "MMIDIDX" version 1 (core/model/megatron_index.h).
MMIDIDX_MAGIC = b"MMIDIDX\x00\x00"
MMIDIDX_VERSION = 1
DTYPE_CODE_INT32 = 4
DTYPE_CODE_UINT16 = 8

MASK_CONVENTION = (
    "PREFIX.loss_mask.bin holds one uint8 per token of PREFIX.bin, in the "
    "same order. mask[j] == 1 means token j is predicted: it is a target the "
    "loss counts. The prediction made at position j has token j + 1 as its "
    "target, so a trainer counts it when mask[j + 1] == 1. Every token is an "
    "input whatever its mask.")

# Files that define a Hugging Face tokenizer, and those that hold a chat
# template; their sha256 go into PREFIX.json.
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json",
                    "special_tokens_map.json", "added_tokens.json",
                    "vocab.json", "merges.txt", "tokenizer.model", "vocab.txt",
                    "spiece.model")
_TEMPLATE_FILES = ("chat_template.jinja", "chat_template.json")
# Any one of these makes a folder worth handing to AutoTokenizer.
_TOKENIZER_MARKERS = ("tokenizer.json", "tokenizer_config.json",
                      "tokenizer.model", "vocab.json", "vocab.txt")

# Reasons for dropping a well-formed example (never an error).
DROP_EMPTY_TEXT = "empty_text"
DROP_EMPTY_MESSAGES = "empty_messages"
DROP_EMPTY_COMPLETION = "empty_completion"
DROP_NO_ASSISTANT = "no_assistant_message"
DROP_NO_PREDICTED = "no_predicted_tokens"
DROP_TRUNCATED_AWAY = "no_predicted_tokens_after_truncation"

# The most lines and bytes one chunk of work holds.
_MAX_CHUNK_LINES = 256
_MAX_CHUNK_BYTES = 4 << 20


class PrepareError(Exception):
    """An error the user can fix; main() prints it and exits with 2."""


class BadExample(Exception):
    """A line that cannot be used: bad JSON, keys, types, or template."""

    def __init__(self, reason: str, key: str | None, message: str):
        super().__init__(message)
        self.reason = reason
        self.key = key
        self.message = message


class DroppedExample(Exception):
    """A well-formed example that contributes nothing; it is skipped."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class _Terminated(BaseException):
    """Raised in the main process by SIGTERM, like KeyboardInterrupt."""


@dataclasses.dataclass(frozen=True)
class Encoded:
    """One tokenized example: token ids and the predicted-token mask."""
    ids: list[int]
    mask: list[int]
    # prompt_completion strings only: tokenizer(prompt) was not a prefix of
    # tokenizer(prompt + completion) (TRL warns and goes on; so does this).
    prompt_prefix_mismatch: bool = False


# ---------------------------------------------------------------------------
# Validation of one record.


def _json_type(value: Any) -> str:
    """The JSON name of a parsed value's type, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _check_messages(value: Any, key: str) -> list[dict[str, Any]]:
    """Checks a list of chat messages; raises BadExample naming the key."""
    if not isinstance(value, list):
        raise BadExample(
            "wrong_type", key,
            f"must be an array of {{\"role\", \"content\"}} messages, not "
            f"{_json_type(value)}")
    for i, message in enumerate(value):
        k = f"{key}[{i}]"
        if not isinstance(message, dict):
            raise BadExample(
                "wrong_type", k,
                f"must be an object with \"role\" and \"content\", not "
                f"{_json_type(message)}")
        if "role" not in message:
            raise BadExample("missing_key", f"{k}.role",
                             "is missing: every message needs a role")
        role = message["role"]
        if not isinstance(role, str):
            raise BadExample("wrong_type", f"{k}.role",
                             f"must be a string, not {_json_type(role)}")
        if role not in ROLES:
            raise BadExample(
                "unknown_role", f"{k}.role",
                f"unknown role {role!r} (expected one of {', '.join(ROLES)})")
        content = message.get("content")
        if content is None:
            # An assistant turn that only calls tools may have no content.
            if not (role == "assistant" and message.get("tool_calls")):
                if "content" not in message:
                    raise BadExample(
                        "missing_key", f"{k}.content",
                        "is missing: every message needs a content string")
                raise BadExample("wrong_type", f"{k}.content",
                                 "must be a string, not null")
        elif not isinstance(content, str):
            raise BadExample(
                "wrong_type", f"{k}.content",
                f"must be a string, not {_json_type(content)} (multimodal "
                f"content parts are not supported)")
    return value


def _check_tools(record: dict[str, Any]) -> list[Any] | None:
    """The record's optional "tools" for the chat template, as TRL takes it."""
    tools = record.get("tools")
    if tools is None:
        return None
    if isinstance(tools, str):
        try:
            tools = json.loads(tools)
        except json.JSONDecodeError as e:
            raise BadExample("wrong_type", "tools",
                             f"is a string that is not JSON: {e}") from None
    if not isinstance(tools, list) or not all(
            isinstance(t, dict) for t in tools):
        raise BadExample("wrong_type", "tools",
                         "must be an array of tool schema objects")
    return tools


def _missing_key(record: dict[str, Any], key: str, fmt: str) -> BadExample:
    keys = ", ".join(repr(k) for k in record) or "none"
    return BadExample(
        "missing_key", key,
        f"is missing (the line's keys: {keys}); --format {fmt} needs it")


def detect_format(record: Any) -> str | None:
    """The format a record's keys say, as --format auto picks it, or None."""
    if not isinstance(record, dict):
        return None
    if "messages" in record:
        return "messages"
    if "prompt" in record and "completion" in record:
        return "prompt_completion"
    if "text" in record:
        return "text"
    return None


# ---------------------------------------------------------------------------
# Tokenization.


class Encoder:
    """Tokenizes records of one format with one tokenizer."""

    def __init__(self, tokenizer: Any, fmt: str):
        self._tok = tokenizer
        self._fmt = fmt
        self._eos_text = tokenizer.eos_token
        self._eos_id = tokenizer.eos_token_id

    def encode(self, record: dict[str, Any]) -> Encoded:
        """Ids and mask of one record; raises BadExample or DroppedExample."""
        if self._fmt == "messages":
            return self._encode_messages(record)
        if self._fmt == "prompt_completion":
            return self._encode_prompt_completion(record)
        return self._encode_text(record)

    def _chat_ids(self,
                  messages: list[dict[str, Any]],
                  tools: Any,
                  key: str,
                  add_generation_prompt: bool = False) -> list[int]:
        """apply_chat_template(messages, tokenize=True)'s ids."""
        if self._tok.chat_template is None:
            raise PrepareError(
                "the tokenizer has no chat template, which conversational "
                "data needs: use the model's instruct/chat tokenizer "
                "(chat_template in tokenizer_config.json or "
                "chat_template.jinja)")
        try:
            out = self._tok.apply_chat_template(
                messages,
                tools=tools,
                tokenize=True,
                return_dict=True,
                add_generation_prompt=add_generation_prompt)
        except Exception as e:  # pylint: disable=broad-except
            # Templates raise on what they refuse (e.g. roles that do not
            # alternate); that is the line's fault, not the tool's.
            raise BadExample("template_error", key,
                             f"the chat template refused it: {e}") from None
        return list(out["input_ids"])

    @staticmethod
    def _check_prefix(ids: list[int], part: list[int], key: str,
                      what: str) -> None:
        """Raises BadExample unless part is a prefix of ids."""
        if ids[:len(part)] == part:
            return
        at = next((j for j, (a, b) in enumerate(zip(ids, part)) if a != b),
                  min(len(ids), len(part)))
        raise BadExample(
            "template_prefix_mismatch", key,
            f"the chat template's rendering of {what} ({len(part)} tokens) "
            f"is not a prefix of the whole conversation's ({len(ids)} "
            f"tokens; they differ at token {at}), so the tokens to predict "
            f"cannot be told apart. Templates that render earlier turns "
            f"unlike the last one (e.g. drop earlier reasoning) do this: use "
            f"a template that renders every turn the same way, or pass "
            f"--skip-bad to skip such lines")

    def _encode_messages(self, record: dict[str, Any]) -> Encoded:
        if "messages" not in record:
            raise _missing_key(record, "messages", self._fmt)
        messages = _check_messages(record["messages"], "messages")
        tools = _check_tools(record)
        if not messages:
            raise DroppedExample(DROP_EMPTY_MESSAGES)
        assistants = [
            i for i, m in enumerate(messages) if m["role"] == "assistant"
        ]
        if not assistants:
            raise DroppedExample(DROP_NO_ASSISTANT)
        if assistants[0] == 0:
            raise BadExample(
                "assistant_first", "messages[0].role",
                "the conversation starts with an assistant message, so "
                "there is no prompt to render before it; start with a "
                "system or user message")
        ids = self._chat_ids(messages, tools, "messages")
        mask = [0] * len(ids)
        for i in assistants:
            key = f"messages[{i}]"
            # What the template renders for this turn after the generation
            # prompt: the content and the turn's end (e.g. <|im_end|>\n).
            before = self._chat_ids(messages[:i],
                                    tools,
                                    key,
                                    add_generation_prompt=True)
            self._check_prefix(ids, before, key,
                               f"messages[:{i}] with the generation prompt")
            if i + 1 == len(messages):
                through = ids
            else:
                through = self._chat_ids(messages[:i + 1], tools, key)
                self._check_prefix(ids, through, key, f"messages[:{i + 1}]")
            if len(through) < len(before):
                raise BadExample(
                    "template_prefix_mismatch", key,
                    "the chat template renders this assistant turn in "
                    "fewer tokens than its generation prompt")
            for j in range(len(before), len(through)):
                mask[j] = 1
        return Encoded(ids, mask)

    def _encode_prompt_completion(self, record: dict[str, Any]) -> Encoded:
        for key in ("prompt", "completion"):
            if key not in record:
                raise _missing_key(record, key, self._fmt)
        prompt, completion = record["prompt"], record["completion"]
        if isinstance(prompt, str) and isinstance(completion, str):
            return self._encode_prompt_completion_strings(prompt, completion)
        if isinstance(prompt, list) and isinstance(completion, list):
            prompt = _check_messages(prompt, "prompt")
            completion = _check_messages(completion, "completion")
            tools = _check_tools(record)
            if not completion:
                raise DroppedExample(DROP_EMPTY_COMPLETION)
            if not prompt:
                raise BadExample(
                    "empty_prompt", "prompt",
                    "is an empty message list; a conversational prompt "
                    "needs at least one message")
            prompt_ids = self._chat_ids(prompt,
                                        tools,
                                        "prompt",
                                        add_generation_prompt=True)
            ids = self._chat_ids(prompt + completion, tools, "completion")
            self._check_prefix(ids, prompt_ids, "completion",
                               "the prompt with the generation prompt")
            return Encoded(ids, [0] * len(prompt_ids) + [1] *
                           (len(ids) - len(prompt_ids)))
        for key, value in (("prompt", prompt), ("completion", completion)):
            if not isinstance(value, (str, list)):
                raise BadExample(
                    "wrong_type", key,
                    f"must be a string or an array of messages, not "
                    f"{_json_type(value)}")
        raise BadExample(
            "wrong_type", "completion",
            f"is {_json_type(completion)} while prompt is "
            f"{_json_type(prompt)}: both must be strings or both arrays of "
            f"messages")

    def _encode_prompt_completion_strings(self, prompt: str,
                                          completion: str) -> Encoded:
        """As TRL's SFTTrainer tokenizes a prompt-completion pair of strings.

        The EOS token's text is appended to the completion unless it ends
        with it; prompt + completion is tokenized as one string with the
        tokenizer's default special tokens; the prompt tokenized alone (also
        with them) says how many leading tokens are the prompt's. Where
        tokenizer(prompt) is not a prefix of the whole (a token merges
        across the boundary), TRL warns and goes on; so does this.
        """
        if not completion:
            raise DroppedExample(DROP_EMPTY_COMPLETION)
        if not completion.endswith(self._eos_text):
            completion += self._eos_text
        prompt_ids = list(self._tok(prompt)["input_ids"])
        ids = list(self._tok(prompt + completion)["input_ids"])
        mismatch = ids[:len(prompt_ids)] != prompt_ids
        n = min(len(prompt_ids), len(ids))
        return Encoded(ids, [0] * n + [1] * (len(ids) - n), mismatch)

    def _encode_text(self, record: dict[str, Any]) -> Encoded:
        if "text" not in record:
            raise _missing_key(record, "text", self._fmt)
        text = record["text"]
        if not isinstance(text, str):
            raise BadExample("wrong_type", "text",
                             f"must be a string, not {_json_type(text)}")
        if not text.strip():
            raise DroppedExample(DROP_EMPTY_TEXT)
        ids = list(self._tok(text)["input_ids"])
        if not ids or ids[-1] != self._eos_id:
            ids.append(self._eos_id)
        return Encoded(ids, [1] * len(ids))


def truncate(encoded: Encoded, max_length: int | None) -> tuple[Encoded, bool]:
    """Cuts an example to max_length tokens; says whether it was cut."""
    if max_length is None or len(encoded.ids) <= max_length:
        return encoded, False
    return dataclasses.replace(encoded,
                               ids=encoded.ids[:max_length],
                               mask=encoded.mask[:max_length]), True


# ---------------------------------------------------------------------------
# Work on chunks of lines, in a worker process or in this one.

# A result per line: ("ok", ids bytes, mask bytes, tokens, predicted,
# truncated, prompt_prefix_mismatch), ("drop", reason), ("bad", reason,
# key, message) or ("fatal", message).
LineResult = tuple


@dataclasses.dataclass(frozen=True)
class WorkerConfig:
    """What a worker process needs to tokenize lines as the main one does."""
    model_dir: str
    fmt: str
    max_length: int | None
    id_typecode: str  # array typecode of the ids: "H" (uint16) or "i" (int32)


class ChunkProcessor:
    """Turns chunks of (line number, raw line) into LineResults."""

    def __init__(self, config: WorkerConfig, tokenizer: Any = None):
        self._config = config
        if tokenizer is None:
            tokenizer = load_tokenizer(config.model_dir)
        self._encoder = Encoder(tokenizer, config.fmt)
        self._id_limit = 1 << 16 if config.id_typecode == "H" else 1 << 31

    def process(self, chunk: list[tuple[int, bytes]]) -> list[LineResult]:
        return [self._process_line(n, raw) for n, raw in chunk]

    def _process_line(self, line_no: int, raw: bytes) -> LineResult:
        try:
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise BadExample(
                    "invalid_utf8", None,
                    f"is not valid UTF-8 (byte {e.start})") from None
            if line_no == 1:
                text = text.lstrip("\ufeff")
            try:
                record = json.loads(text)
            except json.JSONDecodeError as e:
                raise BadExample(
                    "invalid_json", None,
                    f"is not JSON: {e.msg} at column {e.colno}") from None
            if not isinstance(record, dict):
                raise BadExample(
                    "not_an_object", None,
                    f"is a JSON {_json_type(record)}, not an object")
            encoded = self._encoder.encode(record)
            encoded, was_cut = truncate(encoded, self._config.max_length)
            predicted = sum(encoded.mask)
            if not encoded.ids or predicted == 0:
                raise DroppedExample(
                    DROP_TRUNCATED_AWAY if was_cut else DROP_NO_PREDICTED)
            bad_ids = [t for t in encoded.ids if not 0 <= t < self._id_limit]
            if bad_ids:
                return (
                    "fatal",
                    f"token id {bad_ids[0]} does not fit the output dtype; the "
                    f"tokenizer's vocabulary is larger than it says")
            ids = array.array(self._config.id_typecode, encoded.ids)
            mask = bytes(encoded.mask)
            if sys.byteorder != "little":
                ids.byteswap()
            return ("ok", ids.tobytes(), mask, len(encoded.ids), predicted,
                    was_cut, encoded.prompt_prefix_mismatch)
        except BadExample as e:
            return ("bad", e.reason, e.key, e.message)
        except DroppedExample as e:
            return ("drop", e.reason)
        except PrepareError as e:
            return ("fatal", str(e))
        except Exception as e:  # pylint: disable=broad-except
            # A tokenizer or template failing in a way no check foresaw:
            # stop, naming the line, rather than with a worker's traceback.
            return ("fatal", f"tokenizing it failed: {type(e).__name__}: {e}")


_WORKER: ChunkProcessor | None = None
_WORKER_ERROR: str | None = None


def _init_worker(config: WorkerConfig) -> None:
    """Pool initializer: the main process alone handles Ctrl-C and SIGTERM."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    global _WORKER, _WORKER_ERROR  # pylint: disable=global-statement
    try:
        _WORKER = ChunkProcessor(config)
    except Exception as e:  # pylint: disable=broad-except
        # An initializer that raises makes the pool start workers forever;
        # report it with the first chunk instead.
        _WORKER_ERROR = f"a worker could not load the tokenizer: {e}"


def _work(chunk: list[tuple[int, bytes]]) -> list[LineResult]:
    if _WORKER is None:
        return [("fatal", _WORKER_ERROR or "the worker did not start")
               ] * len(chunk)
    return _WORKER.process(chunk)


# ---------------------------------------------------------------------------
# Tokenizer loading and fingerprints.


def _import_transformers() -> Any:
    # No network, and no advice about PyTorch, which this tool never uses.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import transformers  # pylint: disable=import-outside-toplevel
    return transformers


def check_model_dir(model_dir: str) -> None:
    """Raises PrepareError unless model_dir looks like a tokenizer folder."""
    if not os.path.exists(model_dir):
        raise PrepareError(
            f"--model {model_dir}: no such folder; give the model's Hugging "
            f"Face folder (the one holding tokenizer.json and "
            f"tokenizer_config.json)")
    if not os.path.isdir(model_dir):
        raise PrepareError(
            f"--model {model_dir} is a file, not a folder; give the folder "
            f"that holds it")
    if not any(
            os.path.isfile(os.path.join(model_dir, f))
            for f in _TOKENIZER_MARKERS):
        raise PrepareError(
            f"--model {model_dir} holds no tokenizer files (none of "
            f"{', '.join(_TOKENIZER_MARKERS)}); copy the tokenizer files of "
            f"the model's Hugging Face repository into it")


def load_tokenizer(model_dir: str) -> Any:
    """AutoTokenizer.from_pretrained(model_dir), local files only."""
    transformers = _import_transformers()
    check_model_dir(model_dir)
    try:
        return transformers.AutoTokenizer.from_pretrained(model_dir,
                                                          local_files_only=True)
    except Exception as e:  # pylint: disable=broad-except
        raise PrepareError(
            f"cannot load a tokenizer from --model {model_dir}: "
            f"{type(e).__name__}: {e}; check that its tokenizer files are "
            f"complete (tokenizer.json, tokenizer_config.json)") from None


def _sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def tokenizer_fingerprint(model_dir: str, tokenizer: Any) -> dict[str, Any]:
    """sha256 of the files that define the tokenizer and of its template."""
    files = {}
    for name in _TOKENIZER_FILES + _TEMPLATE_FILES:
        path = os.path.join(model_dir, name)
        if os.path.isfile(path):
            files[name] = _sha256_file(path)
    if "tokenizer.json" in files:
        sha, basis = files["tokenizer.json"], "tokenizer.json"
    else:
        h = hashlib.sha256()
        names = [n for n in _TOKENIZER_FILES if n in files]
        for name in names:
            h.update(f"{name}\0{files[name]}\n".encode())
        sha = h.hexdigest()
        basis = f"sha256 of 'NAME\\0SHA256\\n' for {', '.join(names)}"
    template = tokenizer.chat_template
    if isinstance(template, dict):
        template = json.dumps(template, sort_keys=True)
    return {
        "tokenizer_sha256": sha,
        "tokenizer_sha256_of": basis,
        "chat_template_sha256": (hashlib.sha256(template.encode()).hexdigest()
                                 if template is not None else None),
        "files_sha256": files,
    }


def vocabulary_size(tokenizer: Any) -> int:
    """One more than the largest id the tokenizer can produce."""
    return max(len(tokenizer), max(tokenizer.get_vocab().values()) + 1)


# ---------------------------------------------------------------------------
# Input.


def _open_input(path: str) -> BinaryIO:
    """The input's bytes, gunzipped when it is gzip (by its magic bytes)."""
    f = open(path, "rb")  # pylint: disable=consider-using-with
    try:
        magic = f.read(2)
        f.seek(0)
    except OSError:
        f.close()
        raise
    if magic == b"\x1f\x8b":
        return gzip.GzipFile(fileobj=f, mode="rb")
    return f


def _lines(path: str) -> Iterator[tuple[int, bytes]]:
    """(1-based line number, line without its end) for each line of path."""
    with _open_input(path) as f:
        for n, line in enumerate(f, 1):
            yield n, line.rstrip(b"\r\n")


def _input_error(path: str, e: BaseException) -> PrepareError:
    if isinstance(e, (gzip.BadGzipFile, EOFError)):
        return PrepareError(
            f"--input {path}: the gzip data is damaged or cut short ({e}); "
            f"get a complete copy of the file")
    if isinstance(e, OSError) and e.strerror:
        return PrepareError(f"--input {path}: cannot read it: {e.strerror}; "
                            f"check the path and its permissions")
    return PrepareError(f"--input {path}: cannot read it: {e}")


def scan_input(path: str) -> tuple[int, int, str]:
    """(lines, non-blank lines, sha256 of the file's bytes) of the input."""
    h = hashlib.sha256()
    lines = examples = 0
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        for _, line in _lines(path):
            lines += 1
            if line.strip():
                examples += 1
    except (OSError, EOFError) as e:
        raise _input_error(path, e) from None
    return lines, examples, h.hexdigest()


def sniff_format(path: str) -> str:
    """--format auto: the format of the first line that parses and says one."""
    try:
        for _, line in _lines(path):
            if not line.strip():
                continue
            try:
                fmt = detect_format(
                    json.loads(line.decode("utf-8").lstrip("\ufeff")))
            except (UnicodeDecodeError, json.JSONDecodeError):
                continue
            if fmt is not None:
                return fmt
    except (OSError, EOFError) as e:
        raise _input_error(path, e) from None
    raise PrepareError(
        f"--input {path}: no line is a JSON object with \"messages\", "
        f"\"prompt\" and \"completion\", or \"text\", so --format auto cannot "
        f"tell the format; fix the file or give --format")


def _chunks(path: str, lines_per_chunk: int,
            blank_counter: list[int]) -> Iterator[list[tuple[int, bytes]]]:
    chunk: list[tuple[int, bytes]] = []
    size = 0
    for n, line in _lines(path):
        if not line.strip():
            blank_counter[0] += 1
            continue
        chunk.append((n, line))
        size += len(line)
        if len(chunk) >= lines_per_chunk or size >= _MAX_CHUNK_BYTES:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk


# ---------------------------------------------------------------------------
# Output.


class _Outputs:
    """The four output files, written to temporaries and renamed at the end."""

    SUFFIXES = (".bin", ".idx", ".loss_mask.bin", ".json")

    def __init__(self, prefix: str):
        self.final = {s: prefix + s for s in self.SUFFIXES}
        folder = os.path.dirname(os.path.abspath(prefix))
        base = os.path.basename(prefix)
        tag = f"{os.getpid()}-{secrets.token_hex(4)}"
        self.temp = {
            s: os.path.join(folder, f".{base}{s}.tmp-{tag}")
            for s in self.SUFFIXES
        }
        self._files: dict[str, BinaryIO] = {}

    def open(self, suffix: str) -> BinaryIO:
        # O_EXCL on a fresh name; mode 0666 so that the umask applies.
        fd = os.open(self.temp[suffix], os.O_WRONLY | os.O_CREAT | os.O_EXCL,
                     0o666)
        f = os.fdopen(fd, "wb")
        self._files[suffix] = f
        return f

    def close(self, suffix: str) -> None:
        f = self._files.pop(suffix)
        f.flush()
        os.fsync(f.fileno())
        f.close()

    def commit(self) -> None:
        for suffix in self.SUFFIXES:
            os.replace(self.temp[suffix], self.final[suffix])

    def discard(self) -> None:
        for f in self._files.values():
            try:
                f.close()
            except OSError:
                pass
        self._files.clear()
        for path in self.temp.values():
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass


def write_index(f: BinaryIO, dtype_code: int, lengths: array.array) -> None:
    """Megatron's MMIDIDX v1 index for one document per sequence."""
    n = len(lengths)
    itemsize = 2 if dtype_code == DTYPE_CODE_UINT16 else 4
    pointers = array.array("q", [0] * n)
    offset = 0
    for i, length in enumerate(lengths):
        pointers[i] = offset
        offset += length * itemsize
    docs = array.array("q", range(n + 1))
    lengths = array.array("i", lengths)
    if sys.byteorder != "little":
        for a in (lengths, pointers, docs):
            a.byteswap()
    f.write(MMIDIDX_MAGIC)
    f.write(struct.pack("<QBQQ", MMIDIDX_VERSION, dtype_code, n, n + 1))
    f.write(lengths.tobytes())
    f.write(pointers.tobytes())
    f.write(docs.tobytes())


# ---------------------------------------------------------------------------
# Progress.


class _Progress:
    """Progress on stderr: in place every ~1 s on a terminal, else each 10%."""

    def __init__(self, total: int, stream: Any = None):
        self._total = total
        self._stream = stream if stream is not None else sys.stderr
        self._tty = bool(getattr(self._stream, "isatty", lambda: False)())
        self._start = self._last = time.monotonic()
        self._last_tenth = 0

    def update(self, done: int) -> None:
        now = time.monotonic()
        tenth = (done * 10 // self._total) if self._total else 10
        if self._tty:
            if now - self._last < 1.0:
                return
        elif tenth <= self._last_tenth or done >= self._total:
            return
        self._last, self._last_tenth = now, tenth
        rate = done / max(now - self._start, 1e-9)
        pct = 100.0 * done / self._total if self._total else 100.0
        line = (f"prepare: {done:,}/{self._total:,} examples ({pct:.0f}%), "
                f"{rate:,.0f} examples/s")
        if self._tty:
            self._stream.write("\r" + line + "\x1b[K")
        else:
            self._stream.write(line + "\n")
        self._stream.flush()

    def finish(self) -> None:
        if self._tty and self._last != self._start:
            self._stream.write("\r\x1b[K")
            self._stream.flush()


# ---------------------------------------------------------------------------
# The command.


def default_workers() -> int:
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:
        cpus = os.cpu_count() or 1
    return max(1, min(8, cpus))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tools/data/prepare",
        description=(
            "Tokenizes fine-tuning JSONL (TRL SFT formats) with a model's own "
            "Hugging Face tokenizer and chat template into Megatron's "
            "PREFIX.bin + PREFIX.idx, which zero3 train --data reads, plus "
            "PREFIX.loss_mask.bin (one uint8 per token, 1 where the token is "
            "predicted, i.e. a target the loss counts) and PREFIX.json."))
    parser.add_argument("--model",
                        required=True,
                        metavar="HFDIR",
                        help="the model's Hugging Face folder (its tokenizer "
                        "and chat template are used)")
    parser.add_argument("--input",
                        required=True,
                        metavar="FILE",
                        help="JSON Lines, one example per line; gzip is read "
                        "as such (.jsonl.gz)")
    parser.add_argument("--out",
                        required=True,
                        metavar="PREFIX",
                        help="writes PREFIX.bin, PREFIX.idx, "
                        "PREFIX.loss_mask.bin and PREFIX.json")
    parser.add_argument("--format",
                        default="auto",
                        choices=("auto",) + FORMATS,
                        help="auto (default) takes it from the first valid "
                        "line's keys: messages; prompt + completion; text")
    parser.add_argument("--max-length",
                        type=int,
                        metavar="N",
                        help="cut longer examples to their first N tokens")
    parser.add_argument("--workers",
                        type=int,
                        default=default_workers(),
                        metavar="N",
                        help="tokenizing processes (default "
                        "min(8, CPUs) = %(default)s)")
    parser.add_argument("--skip-bad",
                        action="store_true",
                        help="skip bad lines, counting them in PREFIX.json, "
                        "instead of stopping at the first")
    return parser


def _check_outputs(prefix: str, input_path: str) -> None:
    """Raises PrepareError for an output prefix that cannot be written."""
    if not prefix or prefix.endswith(os.sep) or os.path.isdir(prefix):
        raise PrepareError(
            f"--out {prefix!r} is a folder; --out takes a prefix such as "
            f"{os.path.join(prefix or '.', 'train')} (writes train.bin, "
            f"train.idx, train.loss_mask.bin, train.json)")
    for suffix in (".bin", ".idx", ".json"):
        if prefix.endswith(suffix):
            raise PrepareError(
                f"--out {prefix} ends with {suffix}; --out takes a prefix: "
                f"--out {prefix[:-len(suffix)]} writes {prefix[:-len(suffix)]}"
                f".bin, .idx, .loss_mask.bin and .json")
    folder = os.path.dirname(os.path.abspath(prefix))
    if not os.path.isdir(folder):
        raise PrepareError(
            f"--out {prefix}: its folder {folder} does not exist; create it "
            f"(mkdir -p {folder}) or choose another prefix")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise PrepareError(
            f"--out {prefix}: cannot write in its folder {folder}; choose a "
            f"writable folder")
    real_input = os.path.realpath(input_path)
    for suffix in _Outputs.SUFFIXES:
        out = prefix + suffix
        same = os.path.realpath(out) == real_input
        if not same and os.path.exists(out):
            try:
                same = os.path.samefile(out, input_path)
            except OSError:
                pass
        if same:
            raise PrepareError(
                f"--out {prefix} would write {out}, which is the input file; "
                f"choose another prefix")


def _check_args(args: argparse.Namespace) -> None:
    if args.max_length is not None and args.max_length < 1:
        raise PrepareError(
            f"--max-length {args.max_length}: must be at least 1")
    if args.workers < 1:
        raise PrepareError(f"--workers {args.workers}: must be at least 1")
    check_model_dir(args.model)
    if not os.path.exists(args.input):
        raise PrepareError(
            f"--input {args.input}: no such file; check the path")
    if os.path.isdir(args.input):
        raise PrepareError(f"--input {args.input} is a folder; give a .jsonl "
                           f"or .jsonl.gz file")
    try:
        with _open_input(args.input) as f:
            f.read(1)
    except (OSError, EOFError) as e:
        raise _input_error(args.input, e) from None
    _check_outputs(args.out, args.input)


class _Stats:
    """Counts for PREFIX.json and the summary."""

    def __init__(self):
        self.examples = 0
        self.written = 0
        self.tokens = 0
        self.predicted = 0
        self.truncated = 0
        self.bad_lines = 0
        self.prompt_prefix_mismatch = 0
        self.dropped: collections.Counter[str] = collections.Counter()
        self.bad_samples: list[str] = []


class _Sink:
    """Takes each line's result in input order: writes it or counts it."""

    def __init__(self, args: argparse.Namespace, bin_file: BinaryIO,
                 mask_file: BinaryIO, stats: _Stats, lengths: array.array):
        self._args = args
        self._bin = bin_file
        self._mask = mask_file
        self._stats = stats
        self._lengths = lengths

    def add(self, line_no: int, result: LineResult) -> None:
        """Raises PrepareError for a bad line (without --skip-bad)."""
        stats = self._stats
        stats.examples += 1
        kind = result[0]
        if kind == "ok":
            _, ids, mask, n, predicted, was_cut, mismatch = result
            self._bin.write(ids)
            self._mask.write(mask)
            self._lengths.append(n)
            stats.written += 1
            stats.tokens += n
            stats.predicted += predicted
            stats.truncated += int(was_cut)
            if mismatch:
                self._warn_mismatch(line_no)
        elif kind == "drop":
            stats.dropped[result[1]] += 1
        elif kind == "bad":
            _, reason, key, message = result
            where = f"{self._args.input}:{line_no}: "
            where += f"key '{key}' " if key else "the line "
            if not self._args.skip_bad:
                raise PrepareError(
                    f"{where}{message}\n  fix the line, or pass --skip-bad "
                    f"to skip bad lines (they are counted in PREFIX.json)")
            stats.bad_lines += 1
            stats.dropped[reason] += 1
            if len(stats.bad_samples) < 20:
                stats.bad_samples.append(where + message)
        else:  # fatal
            raise PrepareError(f"{self._args.input}:{line_no}: {result[1]}")

    def _warn_mismatch(self, line_no: int) -> None:
        if self._stats.prompt_prefix_mismatch < 5:
            sys.stderr.write(
                f"prepare: warning: {self._args.input}:{line_no}: "
                f"tokenizer(prompt) is not a prefix of tokenizer(prompt + "
                f"completion); the completion is taken to start after the "
                f"prompt's token count, as TRL's SFTTrainer does\n")
        self._stats.prompt_prefix_mismatch += 1


def _package_versions() -> dict[str, str]:
    versions = {"python": sys.version.split()[0]}
    for name in ("transformers", "tokenizers", "jinja2"):
        try:
            versions[name] = __import__(name).__version__
        except (ImportError, AttributeError):
            versions[name] = None
    return versions


def _signal_to_exception(signum: int, frame: Any) -> None:
    del signum, frame
    raise _Terminated()


def run(args: argparse.Namespace) -> int:
    """Does the work of main(); raises PrepareError for the user's mistakes."""
    started = time.monotonic()
    _check_args(args)
    tokenizer = load_tokenizer(args.model)
    fmt = args.format if args.format != "auto" else sniff_format(args.input)
    if fmt in ("text", "prompt_completion") and tokenizer.eos_token is None:
        raise PrepareError(
            f"the tokenizer in {args.model} has no EOS token, which --format "
            f"{fmt} appends; set eos_token in its tokenizer_config.json")
    if fmt == "messages" and tokenizer.chat_template is None:
        raise PrepareError(
            f"the tokenizer in {args.model} has no chat template, which "
            f"--format messages needs; use the model's chat/instruct tokenizer "
            f"(chat_template in tokenizer_config.json or chat_template.jinja)")
    vocab = vocabulary_size(tokenizer)
    if vocab <= 1 << 16:
        dtype, dtype_code, typecode, itemsize = ("uint16", DTYPE_CODE_UINT16,
                                                 "H", 2)
    else:
        dtype, dtype_code, typecode, itemsize = ("int32", DTYPE_CODE_INT32, "i",
                                                 4)
    fingerprint = tokenizer_fingerprint(args.model, tokenizer)
    total_lines, total_examples, input_sha = scan_input(args.input)

    config = WorkerConfig(os.path.abspath(args.model), fmt, args.max_length,
                          typecode)
    workers = max(1, min(args.workers, total_examples))
    lines_per_chunk = max(
        1, min(_MAX_CHUNK_LINES, math.ceil(total_examples / (workers * 8))))
    stats = _Stats()
    lengths = array.array("i")
    blank = [0]
    outputs = _Outputs(args.out)
    pool = None
    progress = _Progress(total_examples)
    old_term = signal.signal(signal.SIGTERM, _signal_to_exception)
    try:
        bin_file = outputs.open(".bin")
        mask_file = outputs.open(".loss_mask.bin")
        chunks = _chunks(args.input, lines_per_chunk, blank)
        if workers == 1:
            processor = ChunkProcessor(config, tokenizer)
            results = ((processor.process(c), c) for c in chunks)
        else:
            pool = _start_pool(workers, config)
            results = _ordered(pool, chunks, 2 * workers + 2)
        sink = _Sink(args, bin_file, mask_file, stats, lengths)
        for chunk_results, chunk in results:
            for (line_no, _), result in zip(chunk, chunk_results):
                sink.add(line_no, result)
            progress.update(stats.examples)
        progress.finish()
        if pool is not None:
            pool.close()
            pool.join()
            pool = None
        if stats.written == 0:
            raise PrepareError(
                f"--input {args.input}: no example is left to write "
                f"({_dropped_text(stats) or 'the file has no examples'}); "
                f"nothing was written")
        outputs.close(".bin")
        outputs.close(".loss_mask.bin")
        write_index(outputs.open(".idx"), dtype_code, lengths)
        outputs.close(".idx")
        report = _report(args, fmt, dtype, dtype_code, itemsize, vocab,
                         fingerprint, tokenizer, stats, blank[0], total_lines,
                         input_sha, outputs)
        f = outputs.open(".json")
        f.write((json.dumps(report, indent=2) + "\n").encode())
        outputs.close(".json")
        # From here on the run has succeeded: a signal while the four files
        # are renamed into place is ignored rather than leaving a mix of
        # old and new outputs (the handlers come back below).
        old_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        try:
            outputs.commit()
        finally:
            signal.signal(signal.SIGINT, old_int)
    except BaseException:
        if pool is not None:
            pool.terminate()
            pool.join()
        outputs.discard()
        raise
    finally:
        signal.signal(signal.SIGTERM, old_term)
    elapsed = time.monotonic() - started
    dropped = _dropped_text(stats)
    sys.stderr.write(
        f"prepare: wrote {args.out}.{{bin,idx,loss_mask.bin,json}}: "
        f"{stats.written:,} of {stats.examples:,} examples ({fmt}), "
        f"{stats.tokens:,} tokens ({stats.predicted:,} predicted, {dtype}), "
        f"{stats.truncated:,} truncated, "
        f"{sum(stats.dropped.values()):,} dropped"
        f"{' (' + dropped + ')' if dropped else ''} in {elapsed:.1f} s\n")
    return EXIT_OK


def _start_pool(workers: int, config: WorkerConfig) -> Any:
    """A pool of fresh (spawned) tokenizing processes."""
    import multiprocessing  # pylint: disable=import-outside-toplevel
    # The workers start with SIGINT ignored (an ignored signal stays ignored
    # across exec), so Ctrl-C reaches this process alone, which stops them.
    old_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        return multiprocessing.get_context("spawn").Pool(
            workers, initializer=_init_worker, initargs=(config,))
    finally:
        signal.signal(signal.SIGINT, old_int)


def _ordered(pool: Any, chunks: Iterator[list[tuple[int, bytes]]],
             window: int) -> Iterator[tuple[list[LineResult], list]]:
    """The pool's results in input order, at most `window` chunks in flight."""
    pending: collections.deque = collections.deque()
    for chunk in chunks:
        pending.append((pool.apply_async(_work, (chunk,)), chunk))
        if len(pending) >= window:
            result, done = pending.popleft()
            yield result.get(), done
    while pending:
        result, done = pending.popleft()
        yield result.get(), done


def _dropped_text(stats: _Stats) -> str:
    return ", ".join(
        f"{n:,} {reason}" for reason, n in sorted(stats.dropped.items()))


def _report(args, fmt, dtype, dtype_code, itemsize, vocab, fingerprint,
            tokenizer, stats, blank_lines, total_lines, input_sha,
            outputs) -> dict[str, Any]:
    """The contents of PREFIX.json."""
    return {
        "tool": TOOL_NAME,
        "tool_version": TOOL_VERSION,
        "versions": _package_versions(),
        "input": {
            "path": args.input,
            "sha256": input_sha,
            "lines": total_lines
        },
        "model": args.model,
        "tokenizer": {
            "class": type(tokenizer).__name__,
            "vocabulary_size": vocab,
            "bos_token": tokenizer.bos_token,
            "eos_token": tokenizer.eos_token,
            "eos_token_id": tokenizer.eos_token_id,
            **fingerprint,
        },
        "format": fmt,
        "format_requested": args.format,
        "max_length": args.max_length,
        "skip_bad": args.skip_bad,
        "dtype": dtype,
        "dtype_code": dtype_code,
        "files": {
            "bin": os.path.basename(outputs.final[".bin"]),
            "idx": os.path.basename(outputs.final[".idx"]),
            "loss_mask": os.path.basename(outputs.final[".loss_mask.bin"]),
        },
        "index": {
            "format": "MMIDIDX",
            "version": MMIDIDX_VERSION,
            "sequences": stats.written,
            "documents": stats.written,
            "bin_bytes": stats.tokens * itemsize
        },
        "loss_mask": {
            "dtype": "uint8",
            "bytes": stats.tokens,
            "convention": MASK_CONVENTION
        },
        "counts": {
            "examples": stats.examples,
            "written": stats.written,
            "tokens": stats.tokens,
            "predicted_tokens": stats.predicted,
            "truncated": stats.truncated,
            "dropped": sum(stats.dropped.values()),
            "dropped_by_reason": dict(sorted(stats.dropped.items())),
            "bad_lines": stats.bad_lines,
            "blank_lines": blank_lines,
            "prompt_prefix_mismatch": stats.prompt_prefix_mismatch,
        },
        "bad_line_samples": stats.bad_samples,
        "notes": {
            "truncated": "written examples cut to max_length tokens; those "
                         "left with no predicted token are dropped instead "
                         "(no_predicted_tokens_after_truncation)",
            "dropped": "examples == written + dropped; bad lines "
                       "skipped by --skip-bad are among the dropped, under "
                       "their reason, and also counted in bad_lines",
        },
    }


def main(argv: list[str] | None = None) -> int:
    """Runs the command; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        return run(args)
    except PrepareError as e:
        sys.stderr.write(f"prepare: error: {e}\n")
        return EXIT_ERROR
    except (OSError, EOFError) as e:
        # Reading or writing failed midway (a full disk, a file that
        # changed under the run): the outputs were discarded.
        sys.stderr.write(f"prepare: error: {type(e).__name__}: {e}; no "
                         f"output was written\n")
        return EXIT_ERROR
    except KeyboardInterrupt:
        sys.stderr.write("\nprepare: interrupted; no output was written\n")
        return EXIT_SIGINT
    except _Terminated:
        sys.stderr.write("\nprepare: terminated; no output was written\n")
        return EXIT_SIGTERM
