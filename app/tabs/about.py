"""The About tab: what DefSent and Vec2Sent are, and the active checkpoint's manifest."""
from __future__ import annotations

import gradio as gr

from ..handlers import Studio
from ..wiring import handler
from .shared import EXACT_ROUNDS

ABOUT = f"""
### What is this?

**DefSent** (Tsukagoshi, Sasano & Takeda, 2021) trains a sentence encoder on dictionary
definitions: the pooled embedding of a definition is fed to a *frozen* word-prediction head, and the
encoder learns until the head names the defined word. The embedding space then lines up with words,
which makes it good for similarity, and gives a **reverse dictionary** for free: describe a word,
get the word.

The **word head** is the masked-language-model head of BERT-style models (a base that ships without
one, like all-MiniLM-L6-v2, gets one fitted before DefSent training), kept frozen and tied to the
input word embeddings, so it can read *any* sentence vector as a distribution over words. The
shipped model adds **word vectors**: each word's own embedding, so a description also scores each
word by how close it lies to that word in the same space; the two scores together rank the right
word higher than either alone. Last, a **hubness correction** lowers words that score high for
almost any text (each word loses half its mean score on the ten training definitions nearest to it),
so general words stop crowding the top of every list. All 147k WordNet words and phrases are
scored twice, reading the description as a dictionary gloss and as a person's words, who mostly mean
a common word ("bird" rather than "ovenbird"); the answer mixes the two readings.

**Vec2Sent** (Kerscher & Eger, 2020) is a decoder trained to turn sentence vectors back into
sentences; with it, analogies and interpolations between sentences can be read as text. Of the
sentences its beam search finds, from the vector and once more from the vector moved along what the
first sentence missed, the app shows the one whose own embedding lies closest to the vector. With
"Refine" it corrects {EXACT_ROUNDS} times instead of once: more sentences come back exactly, in about 2 s each.
Among sentences that fit the vector about as well, a small language model, Gemma 3 270M, picks the most fluent.
Gemma is provided under and subject to the [Gemma Terms of Use](https://ai.google.dev/gemma/terms); its use here is
subject to the [Gemma Prohibited Use Policy](https://ai.google.dev/gemma/prohibited_use_policy) (NOTICE).

"""
SHARED_MODELS = "Models are shared by every user of this server; your inputs, maps and uploads stay in your session."
PUBLIC_MODELS = ("This is a public server: the model you choose and the models you fine-tune and save are yours "
                 "alone (for this session); your inputs, maps and uploads stay in your session too.")


def create(tab: gr.Tab, studio: Studio, session: gr.State) -> None:
    gr.Markdown(ABOUT + (PUBLIC_MODELS if studio.public is not None else SHARED_MODELS))
    active = gr.Markdown()
    with gr.Accordion("The whole manifest (JSON)", open=False, elem_id="about-manifest"):
        manifest = gr.Code(language="json", label="Manifest of the active checkpoint")
    tab.select(handler(studio.about), session, [active, manifest], api_visibility="private")
