"""Who a fact is about and who it speaks to: a memory is a statement about the user, in the third person.

The extraction prompt asks for facts "in the third person about the user ("The user ...")". A capable
model writes them so (2,536 of LoCoMo's 2,541 observation facts name their speaker). A weak one often
does not (of the 88 texts SmolLM2 got stored in 200 messages, 2 began "The user"); what it writes instead:
- the user's message copied in the first person ("Woo! I finally finished my first full screenplay"):
  a statement of the user's, and a memory once put in the third person (`in_third_person`: "The user
  finally finished their first full screenplay"); an opening greeting or interjection is no part of it;
- a remark to the other speaker ("You got it!", "I'm so glad you're interested in it"): no fact;
- a sentence about someone or something else, with no word of the user ("Maria loves to play games",
  "She enjoys soccer", "The building will have a green roof"): not a memory about the user;
- a sentence that opens with a pronoun the chat alone resolves ("They're city dogs", "It's downtown").
`user_fact` puts a text in the third person and says why it is none of the user's facts; the grounding
guard then judges whether what it says is what the user said (curate.grounding). A prompt of the caller's
own may define facts otherwise (mem0's custom prompts), so extraction applies this only with memvault's.
"""

from __future__ import annotations

import re

from memvault.curate.meaning import IRREGULAR_PAST
from memvault.text.wording import PAST_PERFECT, content_roots

# A greeting, thanks or interjection opening a text ("Hey Gina!", "Thanks, Maria!", "Wow!"), with the name
# of the one greeted after it; the name may come first too ("Gina, cool!").
INTERJECTIONS = (r"hey|hi|hello|hiya|thanks|thank you|wow|woo+(?:hoo)?|cool|yeah|yea|yep|yup|nah|nope|yay|yes|ok|okay|"
                 r"oh|aw+|sorry|"
                 r"congrats|congratulations|nice|great|awesome|totally|absolutely|definitely|sure|"
                 # sign-offs ("Talk soon!", SmolLM2 from "Great catching up! Take care, talk soon.")
                 r"take care|talk soon|talk to you soon|see you soon|see ya|bye|goodbye|catch you later")
GREETING = re.compile(rf"^(?:[A-Z][\w'-]*,\s*)?(?i:{INTERJECTIONS})(?:,?\s+[A-Z][\w'-]*)?\s*[,!.]")
MIN_GREETING_REST = 4  # content words after a greeting that make it more than one
# A text said to someone: "you" outside quotes. A fact about the user may say "you" in the generic sense
# ("The user thinks it's key to find something that keeps you motivated": 6 of LoCoMo's 2,541), so this
# refuses only a text that does not speak of the user in the third person.
SECOND_PERSON = re.compile(r"(?<![\w'’-])(?:you|your|yours|yourself|you're|you've|you'll|you'd)(?![\w'’-])",
                           re.IGNORECASE)
# Someone called by name with an exclamation ("Sounds great, Mel!", "Maria! I'm so excited"): a remark to
# them. Only with "!": "The user lives in Lisbon, Portugal." names a place, not a listener.
VOCATIVE = re.compile(r"(?:,\s*|^|[.!?]\s+)([A-Z][a-z'’-]+)!")
# A name after a comma that ends a sentence, in a text that says "you": "I'm here for you, Sam." ("my friend, Sam."
# with no "you" is the friend's name).
ADDRESSED = re.compile(r",\s*([A-Z][a-z'’-]+)\s*(?:[.?]+\s*$|[.?]\s)")
# Thanks said to someone ("Thanks for sharing it with the user!", SmolLM2): a remark, not a fact ("Thanks to her
# tutor, the user passed" is one).
THANKING = re.compile(r"^(?:thanks|thank you|thx|many thanks)\b(?!\s+to\b)", re.IGNORECASE)
# A request to the other speaker in the user's words made third person: "Let the user know if there's anything
# else the user can do to help!" (SmolLM2's, of "Let me know ...").
BIDDING = re.compile(r"^(?:please\s+)?(?:let (?:me|us|the user) know|keep (?:me|us|the user) posted)\b", re.IGNORECASE)
# The user in the third person, as the prompt asks ("The user", "the user's", "User").
THIRD_PERSON = re.compile(r"(?<![\w-])user(?:['’]s)?(?![\w-])", re.IGNORECASE)
# The first person singular, outside hyphenated words ("me-time" is no "me"); a weak model's "i" too ("The user is
# glad i could help"), not that of "i.e.".
FIRST_PERSON = re.compile(r"(?<![\w'’-])(?:[Ii]|[Ii]['’](?:m|ve|ll|d)|[Mm]e|[Mm]y|[Mm]ine|[Mm]yself)(?![\w'’-]|\.\w)")
# An opening pronoun that only the chat resolves ("They're city dogs", "It's downtown", "She loves it").
DANGLING = re.compile(r"^(?:it|it['’]s|its|they|they['’](?:re|ve|ll|d)|them|he|he['’]s|she|she['’]s|his|her|"
                      r"this|that|that['’]s|these|those|we|we['’](?:re|ve|ll|d)|us|our)(?![\w'’-])", re.IGNORECASE)
# A fact whose object is a pronoun only the chat resolves, with little else: "The user totally gets it",
# "The user can't imagine life without it" (SmolLM2's sentences once its chatter is set aside).
PRONOUN_END = re.compile(r"\b((?:it|this|that|them)(?:\s+(?:too|again|as well|so much|a lot))?"
                         r"|(?:think|thinks|believe|believes|hope|hopes|guess|guesses|suppose|supposes)\s+so)\W*$",
                         re.IGNORECASE)  # ... or "so" of a view ("Yea, the user believes so!")
MIN_PRONOUN_FACT = 3  # content words besides "the user" that make such a fact say something
# A clause's continuation with nothing before it: "So much that the user got tattoos", "Which helped".
FRAGMENT = re.compile(r"^(?:so much that|so that|which|because)\b", re.IGNORECASE)
# A sentence copied with the conjunction that tied it to the one before: "And I'll be visiting more HP spots".
LEADING_CONJUNCTION = re.compile(r"^\s*(?:and|but|or|plus|so(?!\s+(?:much|that)\b))\b,?\s*(?=\w)", re.IGNORECASE)
# Where a weak model's text of several sentences splits (not after "Dr." or an initial; texts with quotes are
# kept whole: a quoted sentence is not the model's).
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9])")
ABBREVIATED_END = re.compile(r"(?:\b(?:Mr|Mrs|Ms|Dr|St|Jr|Sr|vs|etc)|(?<![\w.])[A-Z])\.$")
QUOTE_MARK = re.compile(r"[\"“”‘]|(?:^|\s)'")
# Pointing the other speaker at something shown: "Look what letter I got!", "Check out this pic of my dogs".
SHOWING = re.compile(r"^(?:look|check (?:out|this|it)|guess what|see|here['’]s|here is|here are)\b", re.IGNORECASE)
# How a user names themselves: "I'm Alice", "my name is Alice", "call me Al", "Alice here:", "Alice again:".
SELF_NAMED = re.compile(r"\b(?:I['’]m|I am|[Mm]y name is|[Mm]y name['’]s|[Cc]all me|[Tt]his is)\s+([A-Z][a-z'’-]+)"
                        r"(?=\s*(?:[,.:;!]|\band\b|$))|^([A-Z][a-z'’-]+)(?=:|\s+(?:here|again)\b)", re.MULTILINE)
# How the other speaker calls the user by name: after a greeting or thanks, or with "!" after a comma.
CALLED = re.compile(rf"(?:^|[.!?]\s+)(?i:{INTERJECTIONS}),?\s+([A-Z][a-z'’-]+)\s*[,!.?]|,\s*([A-Z][a-z'’-]+)!",
                    re.MULTILINE)
# A fact that says who the user is by a name: "The user is Max", "The user's name is Bo", "The user is called Sam".
IS_NAMED = re.compile(r"^(?i:the user(?:['’]s name)? (?:is|was)(?: called| named)?) "
                      r"([A-Z][a-z'’-]+)(?=\s*(?:[,.;!]|$))")
# A fact that reports courtesy: the user thanks, greets, apologises, congratulates or wishes well ...
COURTESY = re.compile(r"^the user (?:also |just )?(?:thank|greet|apologi[sz]|congratulat|wish|compliment)\w*\b",
                      re.IGNORECASE)
# ... for what courtesy is for; fewer other content words than this and there is nothing else in it.
COURTESY_WORDS = frozenset(content_roots(
    "support supporting help helping encouragement encouraging words kind kindness advice sharing share thing things "
    "assistant them her him their his well luck best great amazing nice good lovely time chat talk"))
MIN_COURTESY_REST = 2
# A question the user asked, reported ("The user asked how long the assistant has been married"): no knowledge of
# the user's, and never to be injected as one (Qwen2.5 1.5B: 2 of 51 stored facts; LoCoMo's annotators 5 of 2,541).
# "The user asked John for help with the fundraiser" is a request, and kept.
ASKED = re.compile(r"^the user (?:also |just )?(?:asked|asks|wondered|wonders|inquired|inquires|wanted to know|"
                   r"wants to know)(?: [A-Z][\w'’-]*| the assistant| them| her| him)? "
                   r"(?:how|what|whether|if|why|when|where|who|which)\b", re.IGNORECASE)
# A guess ("I bet they bring lots of joy", "I guess it's one of those things"): what the user supposes is not
# known to be so, and is mostly of the other's news. "The user bets on horses" is a pastime, and kept.
GUESSING = re.compile(r"^the user (?:also |just )?(?:bets?|guess(?:es)?|supposes?|reckons?)\b(?! on\b)", re.IGNORECASE)
# Advice taken without saying what it was: "The user will definitely keep that in mind".
MINDING = re.compile(r"\b(?:keep|keeps|keeping|kept|bear|bears)\s+(?:it|that|this|them|those|these)\s+in\s+mind\b",
                     re.IGNORECASE)
# An instruction to the assistant ("Always answer in British English", "Never use emojis", "Call me Sam"):
# no fact about the user, but the write policy's rule candidate (curate.policy), so no refusal here.
INSTRUCTION = re.compile(r"^(?:always|never|please|don['’]t|do not|stop|avoid|keep|use|answer|reply|respond|write|"
                         r"speak|talk|call me|address me|remember|be|make sure|give|include|format|explain)\b",
                         re.IGNORECASE)
QUOTED = re.compile(r"\"[^\"]*\"|“[^”]*”")
# Words quoted in single quotes, to the last closing one: "said 'I'm around animals, so I've stayed away.'"
SINGLE_QUOTED = re.compile(r"(?:^|(?<=\s))['‘].*['’](?=$|[\s.,!?;:])")
# The user's words reported after a colon, their "I" kept: "The user said: I like tea".
REPORTED_WORDS = re.compile(r"\b(?:said|says|say|wrote|writes|asked|asks|added|adds)\s*:.*$", re.IGNORECASE | re.DOTALL)
# "The user" put before the user's words copied whole: "The user I'm off to do some taekwondo!"
PREFIXED = re.compile(r"^the user\s+(?=(?:I|I['’](?:m|ve|ll|d)|My)\b)", re.IGNORECASE)
# Subjectless facts in mem0's own style ("Likes pizza", "Is a software engineer", "Name is John") are about
# the user too: they open with a verb, or with one of the few nouns mem0's examples put first.
SUBJECTLESS_NOUNS = frozenset("name age birthday favourite favorite favourites favorites hobbies hobby job occupation "
                              "email phone location hometown".split())
VERB_FIRST = frozenset("""
is was has had does did can will would likes loves enjoys prefers dislikes hates wants plans works worked lives
lived owns speaks studies studied visited visits plays played uses used drinks eats reads writes runs attends
attended started finished moved goes went needs feels believes thinks knows volunteers teaches takes took became
recently also""".split())


def outside_quotes(text: str) -> str:
    return QUOTED.sub(" ", text)


def greeting_only(text: str) -> bool:
    """Whether a text opens with greetings or thanks and says little else ("Hey Gina! Thanks for asking.");
    "Hey Jolene, my dad passed away two days ago" says something after its greeting."""
    rest, opened = strip_greetings(text)
    return opened and len(content_roots(rest)) < MIN_GREETING_REST


def strip_greetings(text: str) -> tuple[str, bool]:
    """The text after its opening greetings and interjections ("Woo! I finally ..." -> "I finally ..."), and
    whether there was one."""
    rest, opened = text.strip(), False
    while (greeting := GREETING.match(rest)) is not None:
        rest, opened = rest[greeting.end():].strip(), True
    return rest, opened


def user_fact(text: str, names: frozenset[str] = frozenset()) -> tuple[str, str | None]:
    """The text as a fact about the user in the third person (`in_third_person`), and why it is none
    (see the module), or None when it is one. `names`: what the user calls themselves (`names_of_user`):
    "Alice loves green tea" is about a user who said "I'm Alice"."""
    if LEADING_CONJUNCTION.match(text) or PREFIXED.match(text):
        text = PREFIXED.sub("", LEADING_CONJUNCTION.sub("", text, count=1), count=1)
        text = text[0].upper() + text[1:]
    rest, _ = strip_greetings(text)
    plain = outside_quotes(rest)
    third = names_user(rest, names)
    addressed = SECOND_PERSON.search(plain) is not None
    vocative = VOCATIVE.search(plain) or (addressed and ADDRESSED.search(plain))
    # in any sentence: a text of several is then judged a sentence at a time (curate.ingest)
    thanking = any(THANKING.match(part) or BIDDING.match(part) for part in sentences(plain))
    if (addressed and not third) or (vocative and vocative.group(1) not in names) or thanking:
        return text, "said to the other speaker, not a fact about the user"
    fact = in_third_person(text)
    plain = outside_quotes(fact).strip()
    dangling = DANGLING.match(plain)
    if dangling:
        return fact, f"not self-contained: it opens with {dangling.group(0)!r} and does not say who or what that is"
    if fragment := FRAGMENT.match(plain):
        return fact, f"not self-contained: it opens with {fragment.group(0)!r}, a clause's continuation"
    pronoun = PRONOUN_END.search(fact.strip())  # not in `plain`: "told them \"you have talent\"" ends in a quote
    if pronoun and len(content_roots(THIRD_PERSON.sub(" ", plain))) < MIN_PRONOUN_FACT:
        return fact, f"not self-contained: it ends with {pronoun.group(1)!r} and says too little else of it"
    minding = next((found for part in sentences(plain) if (found := MINDING.search(part))
                    and len(content_roots(THIRD_PERSON.sub(" ", MINDING.sub(" ", part)))) < MIN_PRONOUN_FACT), None)
    if minding:  # in any sentence: a text of several is then judged a sentence at a time (curate.ingest)
        return fact, f"not self-contained: {minding.group(0)!r} does not say what is kept in mind"
    if GUESSING.match(plain):
        return fact, "a guess, not a fact: what the user bets or supposes is not known to be so"
    if SHOWING.match(outside_quotes(rest).strip()):
        return fact, "small talk: it points the other speaker at something shown"
    if courtesy_only(plain):
        return fact, "small talk: thanks or good wishes with nothing else to remember"
    if ASKED.match(plain):
        return fact, "the user's question, not a fact: what they asked is not known to be so"
    if names_user(fact, names) or subjectless(plain) or INSTRUCTION.match(plain):
        return fact, None
    return fact, "not about the user: it does not say the user"


def sentences(text: str) -> list[str]:
    """A text of several sentences (a weak model copies the message with its chatter: "Sounds great, Mel! I've
    been married for 10 years now! How long have you been married?") as its sentences; one that opens with a
    pronoun stays with the sentence before it ("... a bowl. It reminds me of ..."). One text when it quotes."""
    text = text.strip()
    if QUOTE_MARK.search(text):
        return [text]
    parts: list[str] = []
    start = 0
    for end in SENTENCE_END.finditer(text):
        sentence = text[start:end.start()]
        if not ABBREVIATED_END.search(sentence):
            parts.append(sentence)
            start = end.end()
    parts.append(text[start:])
    joined: list[str] = []
    for part in parts:
        if joined and DANGLING.match(part):
            joined[-1] = f"{joined[-1]} {part}"
        else:
            joined.append(part)
    return joined


def courtesy_only(text: str) -> bool:
    """Whether a fact reports only the user's thanks, greeting, apology or good wishes ("The user thanks Mel
    for her support"): a capable model writes them from courtesy (Qwen2.5 1.5B: 16 of 51 stored facts; none of
    LoCoMo's 2,541 observations), and nothing in them is worth a later conversation. "The user congratulated
    John on finishing his degree" says more, and is kept."""
    opening = COURTESY.match(text)
    if opening is None:
        return False
    rest = text[opening.end():]
    called = set(content_roots(" ".join(re.findall(r"\b[A-Z][\w'’-]*", rest))))  # who is thanked: no content
    said = [word for word in content_roots(rest) if word not in called and word not in COURTESY_WORDS]
    return len(said) < MIN_COURTESY_REST


def names_of_user(said: str, answered: str = "") -> frozenset[str]:
    """The names the user gives themselves in what they said ("I'm Alice", "my name is Bo", "Erin here"), and
    the one the turn they answer calls them by ("Hey Caroline!", "Thanks, Caroline.")."""
    own = {match.group(1) or match.group(2) for match in SELF_NAMED.finditer(said)}
    called = {match.group(1) or match.group(2) for match in CALLED.finditer(answered)}
    return frozenset(own | called)


def mixed_voice(text: str) -> str | None:
    """Why a text that says both "the user" and "I" (outside quotes) is no fact of the user's: its "I" is the
    model's or the other speaker's as much as the user's ("I'm proud of my team ... The user is thrilled",
    SmolLM2 from a user who praised a friend's charity work). Refused whole, not split into its sentences."""
    plain = SINGLE_QUOTED.sub(" ", outside_quotes(strip_greetings(PREFIXED.sub("", text, count=1))[0]))
    plain = REPORTED_WORDS.sub(" ", plain)
    if THIRD_PERSON.search(plain) and FIRST_PERSON.search(plain):
        return "mixes voices: it says both 'the user' and 'I', and whose 'I' is not known"
    return None


def misnamed(fact: str, said: str, names: frozenset[str]) -> str | None:
    """Why a fact that says who the user is ("The user is Max") names them as they did not name themselves:
    "Max, the neighbours' kid, plays the violin" says Max is someone else (SmolLM2 wrote it from a trap). The
    user's own names (`names_of_user`) and "I'm a proud American" ("The user is American") say it."""
    claim = IS_NAMED.match(fact.strip())
    if claim is None or claim.group(1) in names:
        return None
    name = re.escape(claim.group(1))
    if re.search(rf"\b(?:I['’]m|I am)\s+(?:(?:a|an|the)\s+)?(?:[\w'’-]+\s+){{0,2}}{name}(?![\w'’-])", said):
        return None
    return f"another person's name: the user did not say they are {claim.group(1)}"


def names_user(text: str, names: frozenset[str]) -> bool:
    """Whether a text says "the user" or a name of theirs (not only mem0's subjectless style or an instruction)."""
    plain = outside_quotes(text)
    return THIRD_PERSON.search(plain) is not None or named(plain, names)


def named(text: str, names: frozenset[str]) -> bool:
    return any(re.search(rf"(?<![\w'’-]){re.escape(name)}(?![\w-])", text) for name in names)


def subjectless(text: str) -> bool:
    """Whether a text is a fact in mem0's subjectless style ("Likes pizza", "Name is John")."""
    words = re.findall(r"[\w'’]+", text.casefold())
    if not words:
        return False
    return words[0] in VERB_FIRST or (words[0] in SUBJECTLESS_NOUNS and len(words) > 1 and words[1] in ("is", "are"))


# -- the first person put in the third ---------------------------------------------------------------------
MODALS = frozenset("can could will would shall should may might must cannot can't couldn't won't wouldn't "
                   "shouldn't mustn't didn't wasn't".split())
# Forms that are past and present alike, or past only: left as they are after "the user".
UNCHANGED = IRREGULAR_PAST | frozenset(
    "are cost cut drank drew forgot fought hid hit hurt led let meant quit set shut slept spread used".split())
# Looked up with a straight apostrophe (a curly one is straightened first).
OWN_FORMS = {"am": "is", "'m": "is", "have": "has", "'ve": "has", "do": "does", "don't": "doesn't",
             "haven't": "hasn't", "'ll": "will", "'d": "would", "go": "goes", "be": "is"}
ADVERB = re.compile(r"^(?:just|also|still|never|always|often|really|even|only|already|sometimes|now|ever|kinda|"
                    r"sorta|truly|\w{3,}ly)$")
NOT_ADVERBS = frozenset("rely reply apply supply fly ally".split())
# "My husband and I", "Max and I": the verb after "I" is plural ("hiking and I go" is not such a pair).
PAIR_BEFORE = re.compile(r"(?:\b[Mm]y\s+[\w'’-]+|\b[A-Z][a-z'’-]+)\s+and\s+$")
PRONOUN_I = re.compile(r"^I(?:['’](m|ve|ll|d))?$")
WORD = re.compile(r"^[\w'’-]+")
CLAUSE_END = re.compile(r"[,.;:!?]$")  # a word that ends its clause: no verb of its subject follows


def in_third_person(text: str) -> str:
    """A fact the model wrote in the user's own voice, put in the third person, its opening greeting left
    out: "Woo! I finally finished my screenplay" -> "The user finally finished their screenplay". A text
    already in the third person, or in none, is returned as it is (its first letter a capital)."""
    rest, _ = strip_greetings(text)
    plain = outside_quotes(rest)
    if THIRD_PERSON.search(plain) or not FIRST_PERSON.search(plain):  # "The user said: I like tea" is theirs
        return text[:1].upper() + text[1:]
    pieces = re.split(f"({QUOTED.pattern})", rest)  # quoted words are someone's words: left as said
    said = "".join(piece if index % 2 else third_person_words(piece) for index, piece in enumerate(pieces))
    return said[:1].upper() + said[1:]


def third_person_words(text: str) -> str:
    tokens = re.split(r"(\s+)", text)  # words at even places, the spaces between them at odd ones
    for place in range(0, len(tokens), 2):
        word = WORD.match(tokens[place])
        if word is None:
            continue
        subject = PRONOUN_I.match(word.group(0))
        if subject is not None:
            plural = PAIR_BEFORE.search("".join(tokens[:place])) is not None  # "my husband and I are"
            verb = f" {own_form(subject.group(1), tokens[place + 2:place + 3])}" if subject.group(1) else ""
            tokens[place] = "the user" + verb + tokens[place][word.end():]
            if not subject.group(1) and not plural and not CLAUSE_END.search(tokens[place]):
                _conjugate_next(tokens, place + 2)
    text = "".join(tokens)
    text = re.sub(r"(?<![\w'’-])[Mm]yself(?![\w'’-])", "themselves", text)
    text = re.sub(r"(?<![\w'’-])[Mm]ine(?![\w'’-])", "theirs", text)
    text = re.sub(r"(?<![\w'’-])[Mm]e(?![\w'’-])", "the user", text)
    text = _possessives(text)
    return re.sub(r"(^|[.!?]\s+)the user", lambda m: m.group(1) + "The user", text)


def own_form(contracted: str, after: list[str]) -> str:
    """The verb a contraction of "I" stands for, in the third person ("I'm" -> is); "I'd" before a past
    participle is "had" ("I'd been wanting to try it"), else "would" ("I'd love to"), as the normalised
    words read it (text.wording.PAST_PERFECT)."""
    following = WORD.match(after[0]).group(0) if after and WORD.match(after[0]) else ""
    if contracted == "d" and re.match(PAST_PERFECT, f"'d {following.casefold()}"):
        return "had"
    return OWN_FORMS["'" + contracted]


def _conjugate_next(tokens: list[str], place: int) -> None:
    """The verb after "I" (past any adverbs, within its clause) as the third person says it."""
    for index in range(place, len(tokens), 2):
        word = WORD.match(tokens[index])
        if word is None:
            return
        lowered = word.group(0).casefold()
        if ADVERB.match(lowered) and lowered not in NOT_ADVERBS:
            if CLAUSE_END.search(tokens[index]):
                return
            continue
        tokens[index] = _conjugated(word.group(0)) + tokens[index][word.end():]
        return


def _conjugated(word: str) -> str:
    lowered = word.casefold().replace("’", "'")
    if lowered in OWN_FORMS:
        return OWN_FORMS[lowered]
    if (lowered in MODALS or lowered in UNCHANGED or lowered.endswith(("ed", "n't")) or not lowered.isalpha()
            or lowered.endswith("s")):
        return word
    if lowered.endswith(("sh", "ch", "x", "z", "o")):
        return word + "es"
    if lowered.endswith("y") and lowered[-2:-1] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


def _possessives(text: str) -> str:
    """"my" as "the user's" where the sentence has not yet named the user, "their" after it."""
    out = []
    for piece in re.split(r"((?<=[.!?])\s+)", text):
        seen = False  # whether this sentence has named the user yet

        def own(match: re.Match, piece=piece) -> str:
            nonlocal seen
            said = seen or "the user" in piece[: match.start()].casefold()
            seen = True
            return "their" if said else "the user's"
        out.append(re.sub(r"(?<![\w'’-])[Mm]y(?![\w'’-])", own, piece))
    return "".join(out)
