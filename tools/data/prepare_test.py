#!/usr/bin/env python3
# Copyright 2026 The zero3 Authors.
"""Tests for tools/data/prepare.

Builds its own tiny tokenizers (no network, no hub): byte-level BPE trained
on a fixed corpus, with a ChatML chat template in the style of Qwen2.5, one
in the style of Llama 3, one that renders the last assistant turn unlike the
earlier ones (so prefixes are not prefixes), and a 70,000-word WordLevel
vocabulary for int32 ids. Reads the outputs with its own MMIDIDX parser.

Run with the tools/data/requirements.txt environment, e.g.:
    /work/pyenv-data/bin/python -m unittest tools/data/prepare_test.py
    /work/pyenv-data/bin/python tools/data/prepare_test.py
"""

import contextlib
import gzip
import io
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import unittest

# Quiet, offline transformers, as the tool runs it.
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

HERE = os.path.dirname(os.path.abspath(__file__))
PREPARE = os.path.join(HERE, "prepare")
sys.path.insert(0, HERE)

# pylint: disable=wrong-import-position
import tokenizers
from tokenizers import decoders
from tokenizers import models
from tokenizers import pre_tokenizers
from tokenizers import processors
from tokenizers import trainers
import transformers

import prepare_lib

# pylint: enable=wrong-import-position

CORPUS = [
    "Hello there! How are you today?",
    "I am fine, thank you. What is the weather like?",
    "The weather is sunny and warm.\n\nIt will rain tomorrow.",
    "You are a helpful assistant.",
    "Tell me a joke about cats.",
    "Why did the cat sit on the computer? To keep an eye on the mouse!",
    "What is two plus two? Four.",
    "def add(a, b):\n    return a + b\n\n",
    "Numbers 0123456789 and symbols {}[]()<>.,;:!?'\"-_=+*/\\|@#$%^&~`",
    "Unicode text: caf\u00e9, na\u00efve, \u65e5\u672c\u8a9e, emoji "
    "\U0001f642.",
]

# Llama 3's pre-tokenizer split (its tokenizer.json), so that "\n\n" after
# a header is one pre-token whether or not text follows it.
LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|"
                r"\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|"
                r"\s+")

# Qwen2.5-style ChatML: a default system message, tool results as user
# turns, "<|im_start|>assistant\n" as the generation prompt.
CHATML_TEMPLATE = (
    "{%- if messages[0]['role'] == 'system' %}"
    "{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}"
    "{%- else %}"
    "{{- '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{%- if message['role'] == 'system' and loop.first %}"
    "{%- elif message['role'] == 'tool' %}"
    "{{- '<|im_start|>user\\n<tool_response>\\n' + message['content'] + "
    "'\\n</tool_response><|im_end|>\\n' }}"
    "{%- else %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}"
    "{%- endif %}")

# ChatML that marks the last assistant turn with an empty think block, as
# reasoning models' templates do: earlier turns render differently in a
# longer conversation, so a prefix's rendering is not a prefix.
CHATML_THINK_TEMPLATE = CHATML_TEMPLATE.replace(
    "{%- else %}{{- '<|im_start|>' + message['role']",
    "{%- elif message['role'] == 'assistant' and loop.last %}"
    "{{- '<|im_start|>assistant\\n<think>\\n\\n</think>\\n\\n' + "
    "message['content'] + '<|im_end|>\\n' }}"
    "{%- else %}{{- '<|im_start|>' + message['role']")

# Llama 3 style: BOS from the template, headers, "<|eot_id|>" ends a turn.
LLAMA3_TEMPLATE = (
    "{%- for message in messages %}"
    "{%- set content = '<|start_header_id|>' + message['role'] + "
    "'<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' %}"
    "{%- if loop.index0 == 0 %}{%- set content = bos_token + content %}"
    "{%- endif %}"
    "{{- content }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}"
    "{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}"
    "{%- endif %}")


def _byte_level_bpe(special, pre_tokenizer):
    tok = tokenizers.Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizer
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=600,
        special_tokens=special,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False)
    tok.train_from_iterator(CORPUS * 3, trainer)
    return tok


def build_tokenizers(root):
    """Saves the test tokenizers under root; returns {name: folder}."""
    dirs = {}

    chatml = _byte_level_bpe(["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
                             pre_tokenizers.ByteLevel(add_prefix_space=False))
    for name, template in (("chatml", CHATML_TEMPLATE),
                           ("chatml_think", CHATML_THINK_TEMPLATE)):
        fast = transformers.PreTrainedTokenizerFast(tokenizer_object=chatml,
                                                    eos_token="<|im_end|>",
                                                    pad_token="<|endoftext|>")
        fast.chat_template = template
        dirs[name] = os.path.join(root, name)
        fast.save_pretrained(dirs[name])

    llama = _byte_level_bpe([
        "<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>",
        "<|end_header_id|>", "<|eot_id|>"
    ],
                            pre_tokenizers.Sequence([
                                pre_tokenizers.Split(
                                    tokenizers.Regex(LLAMA3_SPLIT),
                                    behavior="isolated"),
                                pre_tokenizers.ByteLevel(add_prefix_space=False,
                                                         use_regex=False)
                            ]))
    bos = llama.token_to_id("<|begin_of_text|>")
    llama.post_processor = processors.TemplateProcessing(
        single="<|begin_of_text|> $A",
        pair="<|begin_of_text|> $A <|begin_of_text|> $B",
        special_tokens=[("<|begin_of_text|>", bos)])
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=llama,
                                                bos_token="<|begin_of_text|>",
                                                eos_token="<|end_of_text|>",
                                                pad_token="<|end_of_text|>")
    fast.chat_template = LLAMA3_TEMPLATE
    dirs["llama3"] = os.path.join(root, "llama3")
    fast.save_pretrained(dirs["llama3"])

    vocab = {"[UNK]": 0, "<s>": 1, "</s>": 2}
    vocab.update({f"w{i}": i for i in range(3, 70000)})
    big = tokenizers.Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    big.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=big,
                                                unk_token="[UNK]",
                                                bos_token="<s>",
                                                eos_token="</s>")
    dirs["bigvocab"] = os.path.join(root, "bigvocab")
    fast.save_pretrained(dirs["bigvocab"])
    return dirs


def chat_ids(tok, messages, **kwargs):
    """apply_chat_template(..., tokenize=True) ids, in transformers 4 or 5."""
    out = tok.apply_chat_template(messages, tokenize=True, **kwargs)
    if isinstance(out, list):
        return out
    return list(out["input_ids"])


def read_dataset(prefix):
    """Parses PREFIX.idx/.bin/.loss_mask.bin/.json independently of the tool.

    Returns a dict: dtype_code, docs (list of id lists), masks (list of 0/1
    lists), doc_index, report (the .json).
    """
    with open(prefix + ".idx", "rb") as f:
        idx = f.read()
    assert idx[:9] == b"MMIDIDX\x00\x00", idx[:9]
    (version,) = struct.unpack_from("<Q", idx, 9)
    assert version == 1, version
    (code,) = struct.unpack_from("<B", idx, 17)
    n, d = struct.unpack_from("<QQ", idx, 18)
    pos = 34
    lengths = struct.unpack_from(f"<{n}i", idx, pos)
    pos += 4 * n
    pointers = struct.unpack_from(f"<{n}q", idx, pos)
    pos += 8 * n
    doc_index = struct.unpack_from(f"<{d}q", idx, pos)
    pos += 8 * d
    assert pos == len(idx), (pos, len(idx))
    fmt, size = {8: ("H", 2), 4: ("i", 4)}[code]
    with open(prefix + ".bin", "rb") as f:
        data = f.read()
    with open(prefix + ".loss_mask.bin", "rb") as f:
        mask = f.read()
    assert len(data) == sum(lengths) * size, (len(data), sum(lengths))
    assert len(mask) == sum(lengths), (len(mask), sum(lengths))
    assert set(mask) <= {0, 1}
    docs, masks, offset = [], [], 0
    for length, pointer in zip(lengths, pointers):
        assert pointer == offset * size, (pointer, offset)
        docs.append(list(struct.unpack_from(f"<{length}{fmt}", data, pointer)))
        masks.append(list(mask[offset:offset + length]))
        offset += length
    with open(prefix + ".json", encoding="utf-8") as f:
        report = json.load(f)
    return {
        "dtype_code": code,
        "docs": docs,
        "masks": masks,
        "doc_index": list(doc_index),
        "report": report,
    }


def runs(mask):
    """(start, end) of each run of consecutive 1s."""
    spans, start = [], None
    for j, m in enumerate(mask + [0]):
        if m and start is None:
            start = j
        elif not m and start is not None:
            spans.append((start, j))
            start = None
    return spans


class PrepareTest(unittest.TestCase):
    """End-to-end tests of tools/data/prepare."""

    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp(prefix="prepare_test_tok_")
        cls.dirs = build_tokenizers(cls.root)
        cls.tok = {
            name: transformers.AutoTokenizer.from_pretrained(path)
            for name, path in cls.dirs.items()
        }

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.root)

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="prepare_test_")
        self.addCleanup(shutil.rmtree, self.tmp)

    # Helpers.

    def write_jsonl(self, name, records, raw=()):
        """Writes records (JSON) then raw lines; returns the path."""
        path = os.path.join(self.tmp, name)
        lines = [json.dumps(r) for r in records] + list(raw)
        opener = gzip.open if name.endswith(".gz") else open
        with opener(path, "wt", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        return path

    def prepare(self, model, input_path, out, *extra):
        """Runs the tool in this process; returns (exit status, stderr)."""
        argv = [
            "--model",
            self.dirs.get(model, model), "--input", input_path, "--out", out,
            "--workers", "1", *extra
        ]
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            try:
                rc = prepare_lib.main(argv)
            except SystemExit as e:
                rc = e.code
        return rc, err.getvalue()

    def prepare_cli(self, model, input_path, out, *extra, **popen):
        """Runs tools/data/prepare as a command; returns CompletedProcess."""
        cmd = [
            sys.executable, PREPARE, "--model",
            self.dirs.get(model, model), "--input", input_path, "--out", out,
            *extra
        ]
        return subprocess.run(cmd,
                              capture_output=True,
                              text=True,
                              timeout=300,
                              check=False,
                              **popen)

    def assert_ok(self, rc, err):
        self.assertEqual(rc, 0, err)

    def assert_only(self, *names):
        """The temporary folder holds exactly these files (no temporaries)."""
        self.assertEqual(sorted(os.listdir(self.tmp)), sorted(names))

    def out(self, name="train"):
        return os.path.join(self.tmp, name)

    # messages.

    def test_messages_chatml(self):
        convs = [
            [{
                "role": "system",
                "content": "You are a helpful assistant."
            }, {
                "role": "user",
                "content": "Hello there! How are you today?"
            }, {
                "role": "assistant",
                "content": "I am fine, thank you."
            }],
            [{
                "role": "user",
                "content": "Tell me a joke about cats."
            }, {
                "role": "assistant",
                "content": "Why did the cat sit on the computer?"
            }, {
                "role": "user",
                "content": "Why?"
            }, {
                "role": "assistant",
                "content": "To keep an eye on the mouse!"
            }],
            [{
                "role": "user",
                "content": "What is the weather like?"
            }, {
                "role": "assistant",
                "content": "get_weather()"
            }, {
                "role": "tool",
                "content": "sunny and warm"
            }, {
                "role": "assistant",
                "content": "The weather is sunny and warm.\n\nEnjoy!"
            }, {
                "role": "user",
                "content": "Thank you."
            }],
        ]
        path = self.write_jsonl("chat.jsonl", [{"messages": c} for c in convs])
        self.assert_ok(*self.prepare("chatml", path, self.out()))
        got = read_dataset(self.out())
        tok = self.tok["chatml"]
        self.assertEqual(got["dtype_code"], 8)
        self.assertEqual(len(got["docs"]), len(convs))
        for conv, ids, mask in zip(convs, got["docs"], got["masks"]):
            self.assertEqual(ids, chat_ids(tok, conv))
            spans = [
                tok.decode(ids[a:b],
                           skip_special_tokens=False,
                           clean_up_tokenization_spaces=False)
                for a, b in runs(mask)
            ]
            # Exactly each assistant's content and the turn's end, which the
            # template renders after the generation prompt; nothing else.
            self.assertEqual(spans, [
                m["content"] + "<|im_end|>\n"
                for m in conv
                if m["role"] == "assistant"
            ])
        report = got["report"]
        self.assertEqual(report["format"], "messages")
        self.assertEqual(report["format_requested"], "auto")
        self.assertEqual(report["counts"]["written"], 3)
        self.assertEqual(report["counts"]["predicted_tokens"],
                         sum(map(sum, got["masks"])))

    def test_messages_llama3(self):
        convs = [[{
            "role": "system",
            "content": "You are a helpful assistant."
        }, {
            "role": "user",
            "content": "What is two plus two?"
        }, {
            "role": "assistant",
            "content": "  Four.  "
        }, {
            "role": "user",
            "content": "And the weather?"
        }, {
            "role": "assistant",
            "content": "Sunny and warm.\n\nIt will rain tomorrow."
        }]]
        path = self.write_jsonl("chat.jsonl", [{"messages": c} for c in convs])
        self.assert_ok(
            *self.prepare("llama3", path, self.out(), "--format", "messages"))
        got = read_dataset(self.out())
        tok = self.tok["llama3"]
        ids, mask = got["docs"][0], got["masks"][0]
        self.assertEqual(ids, chat_ids(tok, convs[0]))
        self.assertEqual(ids[0], tok.bos_token_id)
        self.assertEqual(ids.count(tok.bos_token_id), 1)
        spans = [
            tok.decode(ids[a:b], clean_up_tokenization_spaces=False)
            for a, b in runs(mask)
        ]
        self.assertEqual(spans, [
            "Four.<|eot_id|>",
            "Sunny and warm.\n\nIt will rain tomorrow.<|eot_id|>"
        ])

    def test_template_that_breaks_prefixes_is_refused(self):
        one = [{
            "role": "user",
            "content": "Hi"
        }, {
            "role": "assistant",
            "content": "Hello!"
        }]
        two = one + [{
            "role": "user",
            "content": "Why?"
        }, {
            "role": "assistant",
            "content": "Four."
        }]
        path = self.write_jsonl("chat.jsonl", [{
            "messages": one
        }, {
            "messages": two
        }])
        rc, err = self.prepare("chatml_think", path, self.out())
        self.assertEqual(rc, 2)
        self.assertIn(f"{path}:2: key 'messages[1]'", err)
        self.assertIn("not a prefix", err)
        self.assert_only("chat.jsonl")

        rc, err = self.prepare("chatml_think", path, self.out(), "--skip-bad")
        self.assert_ok(rc, err)
        got = read_dataset(self.out())
        self.assertEqual(len(got["docs"]), 1)
        self.assertEqual(got["docs"][0], chat_ids(self.tok["chatml_think"],
                                                  one))
        counts = got["report"]["counts"]
        self.assertEqual(counts["dropped_by_reason"],
                         {"template_prefix_mismatch": 1})
        self.assertEqual(counts["bad_lines"], 1)

    # prompt_completion.

    def test_prompt_completion_strings(self):
        tok = self.tok["llama3"]
        records = [
            {
                "prompt": "What is two plus two?",
                "completion": " Four."
            },
            # Already ends with EOS: not doubled.
            {
                "prompt": "Tell me a joke.",
                "completion": " Why did the cat sit?<|end_of_text|>"
            },
            {
                "prompt": "",
                "completion": "Hello there!"
            },
        ]
        path = self.write_jsonl("pc.jsonl", records)
        rc, err = self.prepare("llama3", path, self.out())
        self.assert_ok(rc, err)
        self.assertNotIn("warning", err)
        got = read_dataset(self.out())
        self.assertEqual(got["report"]["format"], "prompt_completion")
        for rec, ids, mask in zip(records, got["docs"], got["masks"]):
            completion = rec["completion"]
            if not completion.endswith("<|end_of_text|>"):
                completion += "<|end_of_text|>"
            prompt_ids = tok(rec["prompt"])["input_ids"]
            # TRL's SFTTrainer: prompt + completion + EOS as one string with
            # the default special tokens (here a BOS); the prompt's own
            # tokenization says where the completion starts.
            self.assertEqual(ids, tok(rec["prompt"] + completion)["input_ids"])
            self.assertEqual(mask, [0] * len(prompt_ids) + [1] *
                             (len(ids) - len(prompt_ids)))
            # Where nothing merges across the boundary, that is
            # tokenize(prompt) + tokenize(completion) + EOS.
            self.assertEqual(
                ids, prompt_ids +
                tok(rec["completion"].replace("<|end_of_text|>", ""),
                    add_special_tokens=False)["input_ids"] + [tok.eos_token_id])
            self.assertEqual(ids[0], tok.bos_token_id)
            self.assertEqual(ids.count(tok.eos_token_id), 1)
        self.assertEqual(got["report"]["counts"]["prompt_prefix_mismatch"], 0)

    def test_prompt_completion_boundary_merge_is_counted(self):
        # "the" + "re" tokenize as " there" together: the prompt's own ids
        # are not a prefix. TRL warns and masks by the prompt's length.
        path = self.write_jsonl("pc.jsonl", [{
            "prompt": "Hello the",
            "completion": "re! How are you today?"
        }])
        rc, err = self.prepare("chatml", path, self.out())
        self.assert_ok(rc, err)
        self.assertIn(f"warning: {path}:1:", err)
        got = read_dataset(self.out())
        tok = self.tok["chatml"]
        self.assertEqual(
            got["docs"][0],
            tok("Hello there! How are you today?<|im_end|>")["input_ids"])
        self.assertEqual(got["masks"][0].count(0),
                         len(tok("Hello the")["input_ids"]))
        self.assertEqual(got["report"]["counts"]["prompt_prefix_mismatch"], 1)

    def test_prompt_completion_conversational(self):
        tok = self.tok["chatml"]
        prompt = [{
            "role": "system",
            "content": "You are a helpful assistant."
        }, {
            "role": "user",
            "content": "What is two plus two?"
        }]
        completion = [{"role": "assistant", "content": "Four."}]
        path = self.write_jsonl("pc.jsonl", [{
            "prompt": prompt,
            "completion": completion
        }])
        self.assert_ok(*self.prepare("chatml", path, self.out()))
        got = read_dataset(self.out())
        ids, mask = got["docs"][0], got["masks"][0]
        self.assertEqual(ids, chat_ids(tok, prompt + completion))
        n_prompt = len(chat_ids(tok, prompt, add_generation_prompt=True))
        self.assertEqual(mask, [0] * n_prompt + [1] * (len(ids) - n_prompt))
        self.assertEqual(
            tok.decode(ids[n_prompt:], clean_up_tokenization_spaces=False),
            "Four.<|im_end|>\n")

    # text.

    def test_text_appends_eos(self):
        records = [{
            "text": "The weather is sunny and warm."
        }, {
            "text": "Hello there!<|end_of_text|>"
        }]
        path = self.write_jsonl("t.jsonl", records)
        self.assert_ok(*self.prepare("llama3", path, self.out()))
        got = read_dataset(self.out())
        tok = self.tok["llama3"]
        self.assertEqual(
            got["docs"][0],
            tok(records[0]["text"])["input_ids"] + [tok.eos_token_id])
        self.assertEqual(got["docs"][1], tok(records[1]["text"])["input_ids"])
        for ids, mask in zip(got["docs"], got["masks"]):
            self.assertEqual(ids[0], tok.bos_token_id)
            self.assertEqual(ids[-1], tok.eos_token_id)
            self.assertEqual(ids.count(tok.eos_token_id), 1)
            self.assertEqual(mask, [1] * len(ids))
        self.assertEqual(got["report"]["format"], "text")

    def test_int32_ids_for_a_large_vocabulary(self):
        path = self.write_jsonl("t.jsonl", [{"text": "w3 w69999 w65536"}])
        self.assert_ok(*self.prepare("bigvocab", path, self.out()))
        got = read_dataset(self.out())
        self.assertEqual(got["dtype_code"], 4)
        self.assertEqual(got["docs"], [[3, 69999, 65536, 2]])
        self.assertEqual(got["report"]["dtype"], "int32")

    # The index and the report.

    def test_index_layout_and_counts(self):
        records = [{
            "text": "Hello there!"
        }, {
            "text": "What is two plus two? Four."
        }, {
            "text": "\u65e5\u672c\u8a9e \U0001f642"
        }]
        path = self.write_jsonl("t.jsonl", records, raw=["", "   "])
        self.assert_ok(*self.prepare("chatml", path, self.out()))
        got = read_dataset(self.out())
        with open(self.out() + ".idx", "rb") as f:
            idx = f.read()
        n = len(records)
        self.assertEqual(idx[:9], b"MMIDIDX\x00\x00")
        self.assertEqual(struct.unpack_from("<QBQQ", idx, 9), (1, 8, n, n + 1))
        self.assertEqual(len(idx), 34 + 4 * n + 8 * n + 8 * (n + 1))
        self.assertEqual(got["doc_index"], list(range(n + 1)))
        tokens = sum(len(d) for d in got["docs"])
        self.assertEqual(os.path.getsize(self.out() + ".bin"), 2 * tokens)
        report = got["report"]
        counts = report["counts"]
        self.assertEqual(counts["examples"], 3)
        self.assertEqual(counts["written"], 3)
        self.assertEqual(counts["blank_lines"], 2)
        self.assertEqual(counts["tokens"], tokens)
        self.assertEqual(counts["predicted_tokens"], tokens)
        self.assertEqual(counts["truncated"], 0)
        self.assertEqual(counts["dropped"], 0)
        self.assertEqual(report["index"]["sequences"], 3)
        self.assertEqual(report["index"]["bin_bytes"], 2 * tokens)
        self.assertEqual(report["loss_mask"]["bytes"], tokens)
        self.assertIn("mask[j] == 1 means token j is predicted",
                      report["loss_mask"]["convention"])
        self.assertEqual(report["dtype"], "uint16")
        self.assertEqual(report["tool"], "tools/data/prepare")
        self.assertIsNone(report["max_length"])
        tokdir = self.dirs["chatml"]
        with open(os.path.join(tokdir, "tokenizer.json"), "rb") as f:
            self.assertEqual(report["tokenizer"]["tokenizer_sha256"],
                             prepare_lib.hashlib.sha256(f.read()).hexdigest())
        template = self.tok["chatml"].chat_template
        self.assertEqual(
            report["tokenizer"]["chat_template_sha256"],
            prepare_lib.hashlib.sha256(template.encode()).hexdigest())
        with open(path, "rb") as f:
            self.assertEqual(report["input"]["sha256"],
                             prepare_lib.hashlib.sha256(f.read()).hexdigest())

    # Truncation and dropping.

    def test_truncation_and_dropping(self):
        tok = self.tok["chatml"]
        user = {"role": "user", "content": "Hi"}
        cut = [
            user, {
                "role": "assistant",
                "content": "Why did the cat sit on the computer? To keep "
                           "an eye on the mouse!"
            }
        ]
        lost = [{
            "role": "user",
            "content": "Tell me a joke about cats. " * 4
        }, {
            "role": "assistant",
            "content": "No."
        }]
        whole = [user, {"role": "assistant", "content": "Hello!"}]
        first_predicted = len(chat_ids(tok, [user], add_generation_prompt=True))
        n = max(first_predicted + 3, len(chat_ids(tok, whole)))
        self.assertGreater(len(chat_ids(tok, cut)), n)
        self.assertGreaterEqual(
            len(chat_ids(tok, lost[:1], add_generation_prompt=True)), n)
        self.assertLessEqual(len(chat_ids(tok, whole)), n)
        records = [{
            "messages": cut
        }, {
            "messages": lost
        }, {
            "messages": whole
        }, {
            "messages": []
        }, {
            "messages": [user]
        }]
        path = self.write_jsonl("chat.jsonl", records)
        self.assert_ok(
            *self.prepare("chatml", path, self.out(), "--max-length", str(n)))
        got = read_dataset(self.out())
        self.assertEqual(got["docs"],
                         [chat_ids(tok, cut)[:n],
                          chat_ids(tok, whole)])
        self.assertEqual(got["masks"][0],
                         [0] * first_predicted + [1] * (n - first_predicted))
        counts = got["report"]["counts"]
        self.assertEqual(counts["examples"], 5)
        self.assertEqual(counts["written"], 2)
        self.assertEqual(counts["truncated"], 1)
        self.assertEqual(counts["dropped"], 3)
        self.assertEqual(
            counts["dropped_by_reason"], {
                "empty_messages": 1,
                "no_assistant_message": 1,
                "no_predicted_tokens_after_truncation": 1
            })
        self.assertEqual(got["report"]["max_length"], n)

    def test_empty_text_dropped(self):
        path = self.write_jsonl("t.jsonl", [{
            "text": ""
        }, {
            "text": "Hello!"
        }, {
            "text": "  "
        }])
        self.assert_ok(*self.prepare("chatml", path, self.out()))
        counts = read_dataset(self.out())["report"]["counts"]
        self.assertEqual(counts["written"], 1)
        self.assertEqual(counts["dropped_by_reason"], {"empty_text": 2})

    def test_nothing_left_is_an_error(self):
        path = self.write_jsonl("t.jsonl", [{"text": ""}])
        rc, err = self.prepare("chatml", path, self.out())
        self.assertEqual(rc, 2)
        self.assertIn("no example is left", err)
        self.assert_only("t.jsonl")

    # Bad input.

    def test_bad_lines_name_file_line_and_key(self):
        good = json.dumps({
            "messages": [{
                "role": "user",
                "content": "Hi"
            }, {
                "role": "assistant",
                "content": "Hello!"
            }]
        })
        cases = [
            ("not json {", "the line is not JSON"),
            ("[1, 2]", "the line is a JSON array, not an object"),
            ('{"text": "hi"}', "key 'messages' is missing"),
            ('{"messages": "hi"}', "key 'messages' must be an array"),
            ('{"messages": [{"role": "bot", "content": "x"}]}',
             "key 'messages[0].role' unknown role 'bot'"),
            ('{"messages": [{"role": "user"}]}',
             "key 'messages[0].content' is missing"),
            ('{"messages": [{"role": "user", "content": 5}]}',
             "key 'messages[0].content' must be a string, not number"),
            ('{"messages": [{"role": "assistant", "content": "x"}]}',
             "key 'messages[0].role' the conversation starts with an "
             "assistant"),
            ('{"messages": [{"role": "user", "content": "x"}, '
             '{"role": "assistant", "content": "y"}], "tools": 3}',
             "key 'tools' must be an array"),
        ]
        for raw, expected in cases:
            with self.subTest(raw=raw):
                path = self.write_jsonl("chat.jsonl", [], raw=[good, raw, good])
                rc, err = self.prepare("chatml", path, self.out(), "--format",
                                       "messages")
                self.assertEqual(rc, 2, err)
                self.assertIn(f"prepare: error: {path}:2: {expected}", err)
                self.assertIn("--skip-bad", err)
                self.assertNotIn("Traceback", err)
                self.assert_only("chat.jsonl")

    def test_bad_prompt_completion_types(self):
        path = self.write_jsonl("pc.jsonl", [{
            "prompt": "a",
            "completion": "b"
        }, {
            "prompt": "a",
            "completion": [{
                "role": "assistant",
                "content": "b"
            }]
        }, {
            "prompt": "a"
        }])
        rc, err = self.prepare("chatml", path, self.out())
        self.assertEqual(rc, 2)
        self.assertIn(
            f"{path}:2: key 'completion' is array while prompt is "
            "string", err)
        rc, err = self.prepare("chatml", path, self.out(), "--skip-bad")
        self.assert_ok(rc, err)
        counts = read_dataset(self.out())["report"]["counts"]
        self.assertEqual(counts["dropped_by_reason"], {
            "missing_key": 1,
            "wrong_type": 1
        })

    def test_skip_bad_counts_and_skips(self):
        good = {"prompt": "What is two plus two?", "completion": " Four."}
        raw = [
            "{oops",
            json.dumps(good), "\"just a string\"",
            json.dumps({
                "prompt": 1,
                "completion": "x"
            }),
            json.dumps(good), b"\xff\xfe".decode("latin-1")
        ]
        path = self.write_jsonl("pc.jsonl", [], raw=raw)
        rc, err = self.prepare("llama3", path, self.out(), "--skip-bad")
        self.assert_ok(rc, err)
        got = read_dataset(self.out())
        report = got["report"]
        self.assertEqual(report["format"], "prompt_completion")
        counts = report["counts"]
        self.assertEqual(counts["examples"], 6)
        self.assertEqual(counts["written"], 2)
        self.assertEqual(counts["bad_lines"], 4)
        self.assertEqual(counts["dropped_by_reason"], {
            "invalid_json": 2,
            "not_an_object": 1,
            "wrong_type": 1
        })
        self.assertEqual(len(report["bad_line_samples"]), 4)
        self.assertIn(f"{path}:1:", report["bad_line_samples"][0])

    def test_invalid_utf8_is_bad(self):
        path = os.path.join(self.tmp, "t.jsonl")
        with open(path, "wb") as f:
            f.write(b'{"text": "ok"}\n{"text": "\xff"}\n')
        rc, err = self.prepare("chatml", path, self.out())
        self.assertEqual(rc, 2)
        self.assertIn(f"{path}:2: the line is not valid UTF-8", err)

    def test_gzip_input_reads_the_same(self):
        records = [{"text": f"Hello there! {i}"} for i in range(20)]
        plain = self.write_jsonl("t.jsonl", records)
        packed = self.write_jsonl("t.jsonl.gz", records)
        self.assert_ok(*self.prepare("chatml", plain, self.out("a")))
        self.assert_ok(*self.prepare("chatml", packed, self.out("b")))
        for suffix in (".bin", ".idx", ".loss_mask.bin"):
            with open(self.out("a") + suffix, "rb") as a, \
                    open(self.out("b") + suffix, "rb") as b:
                self.assertEqual(a.read(), b.read(), suffix)

    def test_damaged_gzip_is_an_error(self):
        path = self.write_jsonl("t.jsonl.gz", [{
            "text": f"Hello {i}"
        } for i in range(200)])
        with open(path, "rb") as f:
            data = f.read()
        with open(path, "wb") as f:
            f.write(data[:len(data) // 2])
        rc, err = self.prepare("chatml", path, self.out())
        self.assertEqual(rc, 2)
        self.assertIn(f"--input {path}: the gzip data is damaged", err)
        self.assert_only("t.jsonl.gz")

    # Processes.

    def test_workers_give_identical_bytes(self):
        convs = []
        for i in range(300):
            conv = [{"role": "user", "content": f"What is {i} plus two?"}]
            for turn in range(i % 3 + 1):
                conv.append({
                    "role": "assistant",
                    "content": f"It is {i + 2}." + " Hello there!" * (i % 7)
                })
                conv.append({"role": "user", "content": f"And {turn}?"})
            convs.append({"messages": conv})
        path = self.write_jsonl("chat.jsonl", convs, raw=["{bad"])
        outs = {}
        for workers in ("1", "2"):
            os.mkdir(os.path.join(self.tmp, "w" + workers))
            out = os.path.join(self.tmp, "w" + workers, "train")
            proc = self.prepare_cli("chatml", path, out, "--workers", workers,
                                    "--max-length", "60", "--skip-bad")
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertIn("prepare: wrote", proc.stderr)
            outs[workers] = {}
            for suffix in (".bin", ".idx", ".loss_mask.bin", ".json"):
                with open(out + suffix, "rb") as f:
                    outs[workers][suffix] = f.read()
        self.assertEqual(outs["1"], outs["2"])
        report = json.loads(outs["2"][".json"])
        self.assertEqual(report["counts"]["written"], 300)
        self.assertGreater(report["counts"]["truncated"], 0)
        self.assertEqual(report["counts"]["bad_lines"], 1)

    def test_command_runs_by_its_shebang(self):
        path = self.write_jsonl("t.jsonl", [{"text": "Hello there!"}])
        env = dict(os.environ)
        env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get(
            "PATH", "")
        proc = subprocess.run([
            PREPARE, "--model", self.dirs["chatml"], "--input", path, "--out",
            self.out()
        ],
                              capture_output=True,
                              text=True,
                              env=env,
                              timeout=300,
                              check=False)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(len(read_dataset(self.out())["docs"]), 1)

    def test_outputs_honour_umask(self):
        path = self.write_jsonl("t.jsonl", [{"text": "Hello there!"}])
        old = os.umask(0o027)
        try:
            self.assert_ok(*self.prepare("chatml", path, self.out()))
        finally:
            os.umask(old)
        for suffix in (".bin", ".idx", ".loss_mask.bin", ".json"):
            mode = os.stat(self.out() + suffix).st_mode & 0o777
            self.assertEqual(mode, 0o640, suffix)

    def test_interrupt_leaves_nothing(self):
        records = [{
            "text": f"Hello there! How are you today? {i}"
        } for i in range(60000)]
        path = self.write_jsonl("t.jsonl", records)
        for signum, status in ((signal.SIGINT, 130), (signal.SIGTERM, 143)):
            with self.subTest(signal=signum):
                proc = subprocess.Popen(  # pylint: disable=consider-using-with
                    [
                        sys.executable, PREPARE, "--model", self.dirs["chatml"],
                        "--input", path, "--out",
                        self.out(), "--workers", "2"
                    ],
                    stderr=subprocess.PIPE,
                    text=True)
                self.addCleanup(proc.kill)
                line = proc.stderr.readline()  # the first progress line
                self.assertIn("examples", line)
                proc.send_signal(signum)
                _, rest = proc.communicate(timeout=120)
                self.assertEqual(proc.returncode, status, line + rest)
                self.assertIn("no output was written", rest)
                self.assertNotIn("Traceback", rest)
                self.assert_only("t.jsonl")

    def test_no_torch(self):
        path = self.write_jsonl("t.jsonl", [{"text": "Hello there!"}])
        code = ("import sys; sys.path.insert(0, sys.argv[1]); "
                "import prepare_lib; "
                "rc = prepare_lib.main(sys.argv[2:]); "
                "print(rc, any(m == 'torch' or m.startswith('torch.') "
                "for m in sys.modules))")
        proc = subprocess.run([
            sys.executable, "-c", code, HERE, "--model", self.dirs["chatml"],
            "--input", path, "--out",
            self.out(), "--workers", "1"
        ],
                              capture_output=True,
                              text=True,
                              timeout=300,
                              check=False)
        self.assertEqual(proc.stdout.split(), ["0", "False"], proc.stderr)

    # Refused arguments and paths.

    def test_output_equal_to_input_is_refused(self):
        path = self.write_jsonl("data.json", [{"text": "Hello there!"}])
        with open(path, "rb") as f:
            before = f.read()
        rc, err = self.prepare("chatml", path, self.out("data"))
        self.assertEqual(rc, 2)
        self.assertIn(
            f"would write {self.out('data')}.json, which is the "
            "input file", err)
        with open(path, "rb") as f:
            self.assertEqual(f.read(), before)
        self.assert_only("data.json")

    def test_failure_keeps_earlier_outputs_intact(self):
        path = self.write_jsonl("t.jsonl", [{"text": "Hello there!"}])
        self.assert_ok(*self.prepare("chatml", path, self.out()))
        before = {}
        for suffix in (".bin", ".idx", ".loss_mask.bin", ".json"):
            with open(self.out() + suffix, "rb") as f:
                before[suffix] = f.read()
        bad = self.write_jsonl("bad.jsonl", [{
            "text": "Hello!"
        } for _ in range(50)],
                               raw=["{"])
        rc, _ = self.prepare("chatml", bad, self.out())
        self.assertEqual(rc, 2)
        for suffix, data in before.items():
            with open(self.out() + suffix, "rb") as f:
                self.assertEqual(f.read(), data, suffix)
        self.assert_only("t.jsonl", "bad.jsonl", *["train" + s for s in before])

    def test_path_errors(self):
        path = self.write_jsonl("t.jsonl", [{"text": "Hello there!"}])
        empty_model = os.path.join(self.tmp, "empty_model")
        os.mkdir(empty_model)
        missing = os.path.join(self.tmp, "nowhere")
        cases = [
            (("--model", missing), f"--model {missing}: no such folder"),
            (("--model", empty_model),
             f"--model {empty_model} holds no tokenizer files"),
            (("--input", missing), f"--input {missing}: no such file"),
            (("--out", os.path.join(missing, "train")),
             f"its folder {missing} does not exist; create it"),
            (("--out", self.tmp + os.sep), "is a folder; --out takes a prefix"),
            (("--out", self.out() + ".bin"), "--out takes a prefix"),
            (("--max-length", "0"), "--max-length 0: must be at least 1"),
        ]
        for override, expected in cases:
            with self.subTest(override=override):
                args = {
                    "--model": self.dirs["chatml"],
                    "--input": path,
                    "--out": self.out()
                }
                args.update(dict([override]))
                argv = [x for kv in args.items() for x in kv]
                err = io.StringIO()
                with contextlib.redirect_stderr(err):
                    rc = prepare_lib.main(argv + ["--workers", "1"])
                self.assertEqual(rc, 2)
                self.assertIn(expected, err.getvalue())
                self.assertNotIn("Traceback", err.getvalue())
                self.assertEqual(sorted(os.listdir(self.tmp)),
                                 ["empty_model", "t.jsonl"])

    def test_messages_need_a_chat_template(self):
        path = self.write_jsonl("chat.jsonl", [{
            "messages": [{
                "role": "user",
                "content": "Hi"
            }, {
                "role": "assistant",
                "content": "Hello!"
            }]
        }])
        rc, err = self.prepare("bigvocab", path, self.out())
        self.assertEqual(rc, 2)
        self.assertIn("has no chat template", err)

    def test_auto_format_needs_a_known_key(self):
        path = self.write_jsonl("x.jsonl", [{"question": "Hi"}])
        rc, err = self.prepare("chatml", path, self.out())
        self.assertEqual(rc, 2)
        self.assertIn("--format auto cannot tell the format", err)


if __name__ == "__main__":
    unittest.main()
