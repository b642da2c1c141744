"""What a retrieved turn tells the model about the user, or why it is noise (docs/architecture.md, Retrieval, step 8).

Search finds what resembles the current message, and the turns most like a question are the user's
earlier questions and the model's answers to them. Injected as "memories", they crowd out what the
user stated, and a small model repeats them (SmolLM2 with 5 of 5 facts found answered 1 of 5
questions right). So a prompt gets, after the facts and summaries:
- a user turn only when it states something: a turn of questions, commands ("write me a haiku"),
  greetings and thanks only is noise;
- an assistant turn only when it states something and is not the wreck of an answer: a refusal or a
  non-answer ("I'm sorry, I don't have access to personal information", "The user's name is not
  mentioned"), a loop (memvault.converse.degenerate), or only questions back.
The rules are plain words, English first; a text in another script is judged by its punctuation
alone (a question mark), never dropped for its language.
"""

from __future__ import annotations

import re

from memvault.converse.degenerate import good_part

# A sentence ends at . ! ? (and their full-width forms) or a line break; the mark stays with it.
SENTENCE = re.compile(r"[^.!?。！？\n]+[.!?。！？]*")
WORD = re.compile(r"[\w']+")
QUESTION_MARKS = ("?", "？", "¿")
# A sentence opened by one of these and without a question mark is still a question ("what is my name").
ASKING = frozenset("what who whom whose when where why how which do does did is are was were can could would will "
                   "should shall may might am have has isn't aren't don't doesn't didn't won't wouldn't can't "
                   "couldn't shouldn't".split())
# A request to the assistant, not something the user says about themselves ("write me a haiku").
ASKING_FOR = frozenset("tell give show list write explain summarise summarize translate help make create generate "
                       "suggest describe find fix recommend compare calculate answer define check draft rewrite "
                       "convert search look name plan let's lets imagine pretend act continue repeat say".split())
# Words a person says to be polite or to keep the talk going: a sentence of these only says nothing.
FILLER = frozenset("hi hello hey hiya yo there thanks thank you thx ty ok okay k yes yeah yep no nope sure cool great "
                   "nice good awesome fine lol haha hahaha hmm hm um uh bye goodbye cheers please morning evening "
                   "night afternoon day welcome sorry oh ah wow right alright got it so well and a an the lot lots "
                   "that this was is very much too for all me your see later soon again have helpful funny "
                   "interesting true exactly indeed perfect let think sounds to of i i'm am now just really glad "
                   "happy hear fun bad that's it's".split())
# Words that open a request to remember: what follows is the statement ("remember that I'm vegetarian").
REMEMBER = frozenset("please remember note that keep in mind don't forget do not".split())
# How a model says it has no answer: at the start of an answer, or as its whole first sentence.
REFUSAL = re.compile(
    r"\b(?:i'?m sorry|i am sorry|sorry,|i apologi[sz]e|i (?:can(?:'|no)t|can not|am unable|'m unable|am not able|"
    r"'m not able|do not|don'?t) (?:have|help|provide|access|know|answer|assist|recall|remember|say|tell|see|find)|"
    r"as an ai\b|as a (?:large )?language model|i don'?t know|i do not know|i'?m not sure|i am not sure|"
    r"(?:is|was|are) not (?:mentioned|provided|specified|given|stated|known)|no information|not enough information|"
    r"(?:does|do|did)(?: not|n'?t) (?:mention|say|specify|provide|state))",
    re.IGNORECASE)


def sentences(text: str) -> list[str]:
    return [part.strip() for part in SENTENCE.findall(text) if part.strip()]


def words_of(sentence: str) -> list[str]:
    return [word.lower().replace("’", "'") for word in WORD.findall(sentence.replace("’", "'"))]


def is_question(sentence: str, words: list[str]) -> bool:
    return sentence.rstrip().endswith(QUESTION_MARKS) or sentence.lstrip().startswith("¿") or (
        bool(words) and words[0] in ASKING and not sentence.rstrip().endswith((".", "!", "。", "！")))


def states(sentence: str) -> bool:
    """Whether a sentence says something: not a question, a request to the assistant, nor filler."""
    words = words_of(sentence)
    while words and words[0] in REMEMBER:  # "please remember that I ..." states what follows
        words = words[1:]
    if sentence.lstrip().startswith("/") or is_question(sentence, words):
        return False
    if not words or words[0] in ASKING_FOR or all(word in FILLER for word in words):
        return False
    # one word says little ("Pizza."), but a script without spaces writes a whole sentence as one
    return len(words) >= 2 or any(len(word) >= 4 and not word.isascii() for word in words)


def noise(role: str, text: str) -> str | None:
    """Why a retrieved entry of this role is not the user's knowledge (a reason), or None when it may
    be injected. Facts, summaries, sessions and every role but user and assistant turns are kept."""
    if role not in ("user", "assistant"):
        return None
    if role == "assistant":
        kept, cut = good_part(text)
        if cut is not None and not kept.strip():
            return "a degenerate answer"
        opening = (sentences(kept) or [""])[0]
        if REFUSAL.search(opening) or REFUSAL.search(kept[:80]):
            return "a refused or empty answer"
        text = kept
    if not any(states(sentence) for sentence in sentences(text)):
        return "questions, requests or small talk only" if role == "user" else "no statement in the answer"
    return None
