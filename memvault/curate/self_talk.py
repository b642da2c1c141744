"""Did the user speak of themselves at all? Words reacting to someone else ground no act of the user's own.

A weak model told "Wow Dave, working on cars must be really rewarding." writes "The user has been doing
restoration work on their old cars": every word is in the chat, and the turn is about Dave. Words that react
to what the other told ("Having pets must be a wonderful experience", "Combining your two interests into a
store is super cool", "Chicago sounds great!") ground the user's view of it ("The user thinks ..."), never
an act, a state or a taste of their own ("The user loves having pets"). So a fact that says what the user
does, has, is or likes is refused when the user's words react to the other ("you", "your", "must be",
"sounds", "looks", "seems") and never speak of the user: no word of their own ("I", "my", "we", "let's",
"the user" in a memory's text) and no clause whose subject they left out ("Been busy tackling a project",
"Didn't see any bands, but met lots of artists"). A plain statement keeps its speaker ("The trip to Crete
was amazing" is the user's trip), and so does an answer: "Fitness goals have been hard to reach" answers
"How are you doing on your fitness goals?".
"""

from __future__ import annotations

import re

from memvault.curate.meaning import (
    AUXILIARIES,
    OPENERS,
    REPORTED,
    REPORTING,
    SENTENCE,
    STANCE,
    TAG_QUESTION,
    claim_of,
    is_past,
)
from memvault.text.wording import content_roots, known_any, normalised, roots_of

OWN_WORDS = frozenset("i me my mine myself we us our ours lets user".split())
# A fact's verbs that report the user's words or view, besides REPORTING and STANCE: "The user values
# safety" may come from "safety is top priority"; "showed interest in" from a question about it; "is proud of
# Joanna" from "I'm proud of you" (CHEERING).
VIEWS = re.compile(r"^(?:is |was )?(?:(?:so |really |very )*(?:proud of|(?:happy|thrilled|glad|excited|pleased|sorry) "
                   r"for)\b|express|highlight|discuss|propos|provid|urg|valu|sees?\b|offer|remind|"
                   r"wish|hope|share|told|ask|recogni[sz]|show|understand|empathi[sz]|sympathi[sz]|consider(?:s|ed)\b)")
# Words that react to what the other told: "Having pets must be a wonderful experience", "Sounds great!".
REACTING = frozenset("you your yours must sounds sound looks seems".split())
# A question that asks nothing of the one answering: "Guess what I did?", "Know what?", "What can you do, right?".
RHETORICAL = re.compile(r"\b(?:guess what|know what|wanna know|can you believe|what can you do)\b", re.IGNORECASE)
# A cheer for the other in the first person says nothing of the speaker: "I'm thrilled for you", "I'm so
# proud of you", "I'm glad to hear that" (who then tells nothing of their own reacts only).
CHEERING = re.compile(r"\bI(?:['’]m| am) (?:so |really |very |super |just )*(?:thrilled|happy|glad|proud|excited|"
                      r"pleased|stoked|impressed|sorry) (?:for|of|with) (?:you|y['’]all)\b"
                      r"|\bI(?:['’]m| am) (?:so |really |very |just )*(?:glad|happy|sorry) to hear\b", re.IGNORECASE)
# Where a clause may begin with its subject left out: a sentence, a comma, a dash, "but".
PIECE = re.compile(r"(?<=[.!?])\s+|\n+|\s*[,;:\u2014\u2013]\s*|\s+-\s+|\s+but\s+")
# Opening words of a clause whose subject is the speaker, left out: "Been busy", "Gonna try", "Glad to".
DROPPED_SUBJECT_OPENERS = frozenset("been gonna busy glad got gotta love loved loving hope wish going feeling".split())
NEGATED_OPENERS = frozenset("did ca can wo have had was could would".split())  # "Didn't see any bands" ("did not")
# Words in -ing that are not a verb the speaker does: "Amazing!", "Nothing beats it".
NOT_DOING = frozenset("""
nothing something everything anything morning evening thing king spring ring wedding building painting meeting
feeling wing sibling darling ceiling clothing string amazing interesting exciting inspiring rewarding relaxing
refreshing stunning boring annoying surprising touching moving charming fascinating heartwarming encouraging
outstanding thrilling terrifying satisfying disappointing frustrating overwhelming uplifting breathtaking
demanding challenging amusing calming soothing incoming upcoming ongoing caring welcoming exhausting tiring
promising striking daunting pleasing
""".split())
# After a gerund, a verb makes it the subject, not the speaker's act: "Having pets must be ...".
LINKING = AUXILIARIES | frozenset("makes gives helps brings sounds seems looks".split())


def states_of_user(fact: str) -> bool:
    """Whether a fact, in any of its sentences, says what the user does, has, is or likes, not what they
    said or think of something ("Having a team is key. The user is so thankful for them.")."""
    return any(sentence_states_of_user(sentence) for sentence in SENTENCE.split(fact) if sentence.strip())


def sentence_states_of_user(fact: str) -> bool:
    claim = claim_of(fact)
    first = claim.parts[0]
    predicate = " ".join(first.words[first.subject_size:]) or " ".join(claim.text.split()[1:])
    if first.owner != "user" or not predicate:
        return False
    return not (REPORTING.match(predicate) or STANCE.match(predicate) or VIEWS.match(predicate)
                or predicate.split()[0] in REPORTED)


def speaks_of_self(said: str) -> bool:
    """Whether the user's words say anything of the user, as far as a reaction to the other can tell: a word
    of their own, a clause without its subject, or no reaction at all (see the module)."""
    # "..., don't you think?" asks for agreement, it reacts to no one
    cheered = CHEERING.sub(" you ", said)  # still a reaction, no longer a word of the speaker's own
    untagged = " ".join(TAG_QUESTION.sub(".", sentence.rstrip()) for sentence in SENTENCE.split(cheered))
    words = set(normalised(untagged).replace("let s", "lets").split())
    if OWN_WORDS & words or not REACTING & words:
        return True
    return any(subject_left_out(piece) for piece in PIECE.split(said) if piece.strip())


def subject_left_out(clause: str) -> bool:
    """Whether a clause, not a question, opens with its verb: "Been tweaking a recipe", "Researching agencies"."""
    if clause.rstrip().endswith("?"):
        return False
    words = normalised(clause).split()
    start = next((i for i, word in enumerate(words) if word not in OPENERS), len(words))
    if start == len(words):
        return False
    verb, rest = words[start], words[start + 1:]
    if verb in DROPPED_SUBJECT_OPENERS or is_past(verb):
        return True
    if verb in NEGATED_OPENERS:
        return rest[:1] == ["not"]
    return verb.endswith("ing") and len(verb) > 4 and verb not in NOT_DOING and not LINKING & set(rest)


def selfless_problem(fact: str, said: str, answered: str) -> str | None:
    """Why a fact cannot come from what the user said (see the module), or None: the user's words, or the
    sentences of them the fact's words come from ("Must feel so liberating!" -> "The user is so liberating!"),
    only react to the other. `answered`: the turn the user's words answer (a question there exempts them)."""
    if asks_the_user(answered) or not states_of_user(fact):
        return None
    if speaks_of_self(said) and any(speaks_of_self(sentence) for sentence in sentences_holding(fact, said)):
        return None
    return "ungrounded: the user said nothing of themselves here, they reacted to what someone else told"


def sentences_holding(fact: str, said: str) -> list[str]:
    """The sentences of `said` that hold any of the fact's content words (all of them when none does)."""
    mine = content_roots(fact)
    sentences = [sentence for sentence in SENTENCE.split(said) if sentence.strip()] or [said]
    # a sentence's roots taken once, not once for each word of the fact
    holding = [sentence for sentence in sentences if known_any(mine, roots_of(sentence))]
    return holding or sentences


def asks_the_user(turn: str) -> bool:
    """Whether a turn asks the user something ("How's the tour going?", "What's the name of it?"), not only
    asks a rhetorical question of its own ("Guess what I did?")."""
    return any(sentence.rstrip().endswith("?") and not RHETORICAL.search(sentence)
               for sentence in SENTENCE.split(turn))
