#!/usr/bin/env python3
# Copyright 2026 The zero3 Authors.
#
# Writes tiny_corpus_u16.bin: the built-in corpus (testing/testdata/text/
# corpus.txt) tokenized with the tiny model's byte vocabulary (vocab 259:
# token id = byte value), as flat little-endian uint16 ids, the layout
# nanoGPT's prepare scripts write. Run from the repository root:
#
#     python3 testing/testdata/tokens/make_tiny_corpus.py
#
# core/model/data_file_test checks that the committed file is exactly this.

import struct

with open("testing/testdata/text/corpus.txt", "rb") as f:
    corpus = f.read()
with open("testing/testdata/tokens/tiny_corpus_u16.bin", "wb") as f:
    f.write(struct.pack("<%dH" % len(corpus), *corpus))
