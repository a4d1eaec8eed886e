"""Published numbers to print next to ours (DefSent: Tsukagoshi et al., 2021; SBERT: Reimers &
Gurevych, 2019). Averages are not stored: the report recomputes them over the columns it shows.
"""
from __future__ import annotations

from dataclasses import dataclass

# Scores as printed, one model a line; "-" where a paper has no such row. Left of "|": DefSent
# Table 3 (its non-DefSent rows are SBERT Table 1's), Spearman x100. Right: DefSent Table 4 and
# SBERT Table 5 (Avg. fastText is in SBERT's only), accuracy %.
PUBLISHED = """
Model                         STS12 STS13 STS14 STS15 STS16 STS-B SICK-R |    MR    CR  SUBJ  MPQA SST-2  TREC  MRPC
Avg. GloVe embeddings         55.14 70.66 59.73 68.25 63.66 58.02 53.76  | 77.25 78.30 91.17 87.85 80.18 83.00 72.87
Avg. fastText embeddings          -     -     -     -     -     -     -  | 77.96 79.23 91.68 87.81 82.15 83.60 74.49
Avg. BERT embeddings          38.78 57.98 57.98 63.15 61.06 46.35 58.40  | 78.66 86.25 94.37 88.66 84.40 92.80 69.45
BERT CLS-vector               20.16 30.01 20.09 36.88 38.08 16.50 42.63  | 78.68 84.85 94.21 88.23 84.13 91.40 71.13
InferSent - GloVe             52.86 66.75 62.15 72.77 66.87 68.03 65.65  | 81.57 86.54 92.50 90.38 84.18 88.20 75.77
Universal Sentence Encoder    64.49 67.80 64.61 76.83 73.18 74.92 76.69  | 80.09 85.19 93.98 86.70 86.38 93.20 70.14
SBERT-NLI-base                70.97 76.53 73.19 79.09 74.30 77.03 72.91  | 83.64 89.43 94.39 89.86 88.96 89.60 76.00
SBERT-NLI-large               72.27 78.46 74.90 80.99 76.25 79.23 73.75  | 84.88 90.07 94.52 90.33 90.66 87.40 75.94
SRoBERTa-NLI-base             71.54 72.49 70.80 78.74 73.69 77.77 74.46  |     -     -     -     -     -     -     -
SRoBERTa-NLI-large            74.53 77.00 73.18 81.85 76.82 79.10 74.29  |     -     -     -     -     -     -     -
DefSent-BERT-base (CLS)       67.56 79.86 69.52 76.83 76.61 75.57 73.05  | 80.94 87.57 94.59 89.98 85.78 89.73 73.82
DefSent-BERT-large (CLS)      66.22 82.07 71.48 79.34 75.38 73.46 74.30  | 85.79 90.54 95.58 90.15 91.17 90.47 73.74
DefSent-RoBERTa-base (CLS)    65.55 80.84 71.87 78.77 79.29 78.13 74.92  | 83.94 90.44 94.05 90.70 89.16 90.80 75.52
DefSent-RoBERTa-large (Mean)  58.36 76.24 69.55 73.15 76.90 78.53 73.81  | 86.47 91.53 95.02 91.15 90.77 92.33 73.91
"""


@dataclass(frozen=True)
class ReferenceTable:
    """One published table: rows of scores, one per column."""

    title: str
    source: str
    columns: tuple[str, ...]
    rows: dict[str, tuple[float, ...]]

    def __post_init__(self) -> None:
        for name, scores in self.rows.items():
            if len(scores) != len(self.columns):
                raise ValueError(f"{self.title}: row {name!r} has {len(scores)} scores for {len(self.columns)} columns")


def _parse(published: str) -> tuple[ReferenceTable, ReferenceTable]:
    header, *lines = published.strip().splitlines()
    sts_header, senteval_header = header.split("|")
    sts_columns, senteval_columns = tuple(sts_header.split()[1:]), tuple(senteval_header.split())
    sts_rows, senteval_rows = {}, {}
    for line in lines:
        left, right = line.split("|")
        tokens = left.split()
        name = " ".join(tokens[:-len(sts_columns)])
        for rows, scores in ((sts_rows, tokens[-len(sts_columns):]), (senteval_rows, right.split())):
            if "-" not in scores:
                rows[name] = tuple(float(score) for score in scores)
    return (ReferenceTable("Unsupervised STS: Spearman's rho x100 of cosine similarity",
                           "DefSent Table 3 (non-DefSent rows as in SBERT Table 1)", sts_columns, sts_rows),
            ReferenceTable("SentEval transfer tasks: accuracy %",
                           "DefSent Table 4 and SBERT Table 5", senteval_columns, senteval_rows))


STS_REFERENCE, SENTEVAL_REFERENCE = _parse(PUBLISHED)
# DefSent Table 2, x100, each model with its best pooling; measured on Oxford dictionary data.
WORDS_REFERENCE = ReferenceTable(
    "Word prediction from definitions: MRR x100, top-k accuracy %",
    "DefSent Table 2 (Oxford dictionary test words, not WordNet's)", ("MRR", "top-1", "top-3", "top-10"),
    {"BERT-base, no fine-tuning (Max)": (3.27, 1.57, 3.20, 6.26),
     "DefSent-BERT-base (CLS)": (32.00, 20.79, 36.70, 54.18),
     "DefSent-BERT-large (CLS)": (35.87, 23.88, 41.39, 60.11),
     "DefSent-RoBERTa-base (CLS)": (34.36, 22.41, 39.83, 58.36),
     "DefSent-RoBERTa-large (Mean)": (39.95, 26.99, 46.34, 65.99)})
REFERENCE_TABLES: dict[str, ReferenceTable] = {"sts": STS_REFERENCE, "senteval": SENTEVAL_REFERENCE,
                                               "words": WORDS_REFERENCE}
