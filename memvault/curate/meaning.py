"""Does a fact mean what its source says? A light clause parse and the checks built on it.

The grounding guard (curate.grounding) asks this of every text a model writes from the user's words.
Words alone are the wrong judge both ways: a faithful paraphrase ("I relocated to Denver" -> "The
user lives in Denver") uses other words, and a reversal ("I quit drinking coffee" -> "The user drinks
coffee") uses the same ones. So the source is split into clauses, and for each clause the parse notes
who it is about (the user, a person of the user's such as "my son Max", or someone else), whether it
is negated, and whether it is a wish, plan, question or condition rather than a fact. A fact is
matched to the clause that says most of it, and refused, with a reason naming the kind, when it:
- gives the user what the clause says of someone else ("My son Max plays the violin" -> "The user
  plays the violin"; "Bob told me his dog is sick" -> "The user's dog is sick");
- drops or adds a negation ("quit", "no longer", "used to", "hate" count as negations);
- states a wish, plan, question or condition as done or true, or a plan as past;
- holds a name, number or date the source does not (numbers, ordinals and month names compared
  normalised: "the 3rd of August" is "August 3");
- mixes two clauses ("born in Cork but I live in Galway" -> "lives in Cork").
How close a fact is in meaning to its source (the embedder and shared words) is curate.grounding's.
Every check is local, cheap and needs no model.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, replace

from memvault.text.wording import FREE_WORDS, known, known_any, normalised, root, roots_of

# People (and pets) a clause can be about besides the user: "my son", "my colleague's husband".
PEOPLE = frozenset("""
son sons daughter daughters wife husband partner spouse boyfriend girlfriend fiance fiancee mom mum mother
dad father parent parents brother brothers sister sisters sibling siblings kid kids child children baby
twin twins friend friends colleague colleagues coworker coworkers boss manager neighbour neighbor
neighbours neighbors landlord landlady cousin cousins aunt uncle grandma grandmother grandpa grandfather
grandparents grandson granddaughter grandchildren grandkids nephew niece teacher doctor dentist therapist
roommate flatmate housemate family students student team classmate classmates ex coach trainer mentor tutor
instructor professor supervisor employer nurse vet lawyer dog dogs cat cats puppy
kitten pet pets horse parrot hamster
""".split())
PERSON_SYNONYMS = {"dad": "father", "mom": "mother", "mum": "mother", "kid": "child", "kids": "child",
                   "children": "child", "neighbor": "neighbour", "puppy": "dog", "kitten": "cat",
                   "grandkids": "grandchildren", "coworker": "colleague", "spouse": "partner"}
# "you" is the one the user talks to (the assistant, a friend): someone else too.
THIRD_PERSON = frozenset("he she they him her them his hers their theirs you your yours".split())
POSSESSIVE_OTHERS = frozenset("his her their your".split())
# A fact that reports the user's view of what a clause says ("The user agrees they play a role") does
# not give the user the clause's act.
REPORTING = re.compile(r"^(?:(?:is|are|was|were|am) )?(?:agree|believ|think|feel|find|found|say|said|mention"
                       r"|appreciat|admir|acknowledg|not|emphasi|support|encourag|recommend|suggest|advis|prais"
                       r"|compliment|congratulat|hope)")
# A fact that reports the user's stance toward what they were told: a question, an interest, support, praise.
STANCE = re.compile(r"^(?:(?:is|are|was|were|am) )?(?:inquir|ask|wonder|curious|interest|keen|support|encourag|agree"
                    r"|enthusias|eager|willing|appreciat|admir|prais|compliment|congratulat|recommend|suggest|advis)")
# Words by which the user points at what the turn they answer said ("What will you make next?", "try it too").
POINTERS = frozenset("it that this those these there you your".split())
USER_WORDS = frozenset("i me we us".split())
# Congratulating the other speaker: what follows is theirs ("congrats on the new team").
CONGRATULATING = re.compile(r"^(?:\w+ )?(?:congrats|congratulations|kudos|well done|good luck|best of luck) "
                            r"(?:on|for|with|about)\b")
# Verbs by which a fact reports what the user said, in the past of the saying: "expressed", "shared".
REPORTED = frozenset("expressed shared mentioned said told stated noted explained described admitted revealed".split())
# A subject that is a noun phrase of its own ("the new mayor", "someone on the forum"): someone or
# something else, whose act a fact gives the user only when it copies it nearly whole.
DETERMINERS = frozenset("the a an this that these those someone somebody everyone everybody nobody people".split())
# "The user" then a sentence with a subject of its own ("The user Bob told me ...", "The user The news said
# ..."): a sentence copied after the user's name, not something the user said of themselves.
COPIED_AFTER_USER = re.compile(r"^\W*[Tt]he [Uu]ser\s+(?:[A-Z$\d]|(?i:i|my|our|the|a|an|he|she|they|his|her|their|we"
                               r"|you|your|someone|somebody)\b)")
AUXILIARIES = frozenset("""
am is are was were be been being has have had do does did will would can could shall should may might must
""".split())
# A condition's or question's first word, before the subject it is about ("if you need", "could you tell me").
LEADING_MODALS = frozenset("if could would can will should do does did maybe perhaps".split())
# Adverbs before a clause's subject: they say nothing of who acted, nor (in a fact) of what was done.
ADVERB_OPENERS = frozenset("""
apparently reportedly supposedly allegedly evidently obviously basically literally seriously personally honestly
actually really
""".split())
# Words before a clause's subject that say nothing about who it is ("Yeah, honestly I ...").
OPENERS = ADVERB_OPENERS | frozenset("""
yeah yes yep oh ok okay well so also and but then now just finally hey hi
thanks thank wow lol anyway btw plus last yesterday today tonight recently lately this week weekend month
year friday monday tuesday wednesday thursday saturday sunday morning night still sometimes
tue tues thu thur thurs fri
""".split())
# Clause boundaries inside a sentence: a conjunction followed by a new subject, reported speech.
BOUNDARY = re.compile("|".join((
    r"\s*(?:,|;|:|\s)\s*(?:but|and|while|whereas|although|though|so|because|now)\s+"
    r"(?=(?:i|we|my|our|he|she|they|his|her|their|you|your|the user)\b)",
    r"\s+(?:when|whenever|because|since|['’]cause|cuz|coz)\s+",
    r",\s*so\s+", r"\s+so\s+(?=(?:no|not|never)\b)",
    r"\s+and\s+(?=(?:doesn|don|didn|isn|aren|wasn|won|never|no longer|does not|do not|did not|will not)\b)",
    r"\s*[,;]\s*(?:but|whereas|while|although|though)\s+", r"\s+but\s+",
    r",?\s+(?:despite|even though|even if|although|though|whereas)\s+",
    # an answer before a comma ("Not yet, been busy with exams"): its "not" is the question's, not the clause's
    r"^\W*(?:not (?:yet|really|exactly|quite|much)|nope|nah)\s*[,;:!-]\s*",
    r"\b(?:told me|tells me|said|says|mentioned|thinks|thought)\s+(?:that\s+)?"
    r"(?=(?:he|she|they|his|her|their|it|the)\b)",
)), re.IGNORECASE)
SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+|\s+-\s+|\s*;\s*")
# A comma splice: a comma, then a new subject ("It's not easy, my son broke his arm"); it ends the clause
# before it when that one is a clause of its own (COMMA_SPLICE_LEFT), not a fronted "if ..." or "next week".
COMMA_SPLICE = re.compile(r",\s+(?=(?:maybe |perhaps |yesterday |today |tonight |then |now |recently |finally )?"
                          r"(?:i|we|my|our|he|she|they|you|his|her|their)\b)", re.IGNORECASE)
# "As a City fan, I can't agree": the role opening a sentence is said of the user, outside its clause's "not".
AS_ROLE = re.compile(r"^(\s*as (?:a|an) [^,]+),\s*(?=(?:i|we)\b)", re.IGNORECASE)
SUBORDINATORS = frozenset("""
if when whenever although though because since while as once after before until unless whether even
""".split())
SUBJECTS = frozenset("i we he she they you it there this that".split())
# A tag question asks for agreement with the statement before it: "..., don't you think?", "..., isn't it?";
# typed casually, a negative one needs no comma or question mark ("more fun doesn't it.", "shouldn't I").
TAG_AUXILIARY = r"(?:do|does|did|is|are|was|were|have|has|had|will|would|can|could|should|wo|ca)"
TAG_QUESTION = re.compile(rf",\s*(?:{TAG_AUXILIARY}(?:n['’]t| not)?\s+(?:you|it|he|she|they|we|there|i)"
                          r"(?:\s+(?:think|say|agree))?|right|eh)\s*\?+\s*$"
                          rf"|,?\s+{TAG_AUXILIARY}n['’]t\s+(?:you|it|he|she|they|we|there|i)\s*[?.!]*\s*$",
                          re.IGNORECASE)

# Negations, spelled as `normalised` leaves them (n't is "not"); a few verbs and states negate too.
NEGATION_WORDS = frozenset("""
not never no nothing none nobody neither nor without anymore quit quitting quits stopped stop stops
hate hates hated hating dislike dislikes disliked detest detests loathe loathes avoid avoids avoided
lack lacks lacked lacking unable prevented
""".split())
# A negative as a noun ("the lack of", "an absence of"): what a fact's clause says of it is a view of a want,
# so its polarity is not compared (a source's "the lack of sleep" still negates "gets enough sleep").
NOMINAL_NEGATIVE = re.compile(r"\b(?:the|a|an) (?:lack|absence) of\b")
# States that say a "not" of their own: "I'm vegan" supports "does not eat meat", yet does not negate
# "The user's vegan recipe".
IMPLICIT_NEGATIVES = frozenset("vegan vegetarian teetotal sober retired former formerly".split())
NEGATION_PHRASES = ("no longer", "any more", "gave up", "give up", "giving up", "gives up", "used to",
                    "can not stand", "cannot stand", "not stand", "not bear")
# "not" that does not negate the claim: "can't wait", "couldn't be happier", "not only".
NOT_NEGATING = re.compile(r"\bnot (?:wait|only|just|sure|believe|help|be happier|stop|hesitate|forget)\b"
                          # "nothing makes me happier than", "there's nothing like": a superlative, not a "not"
                          r"|\bnothing (?:\w+ ){0,3}?(?:than|like|compares?|beats?)\b"
                          # "no sport better than football": a superlative too
                          r"|\bno (?:\w+ ){0,2}(?:better|greater|finer|nicer|more \w+) (?:\w+ ){0,2}?than\b"
                          r"|\bnever forget\b|\b(?:not|never|instead of) giv(?:e|ing) up\b|\binstead of quitting\b"
                          r"|\bstopp?e?d? by\b"
                          # "any more tips?" asks for more; "not any more" at a clause's end negates
                          r"|\bany more (?=[a-z])"
                          # "No, I ..." answers; "no way I'm ..." negates (an exclamation "No way!" is an IDIOM)
                          r"|\bno (?:worries|problem|doubt)\b|^not at all\b"
                          r"|^no(?=$| (?:i|we|you|he|she|they|it|that|this|there|my|our|your|his|her|their|the|a|an"
                          r"|thanks|thank|but|and|not|never|worries)\b)")  # but "no luck so far" negates
# Idioms the parse reads by their plain meaning, in the raw sentence before it is split: a double
# negative is a positive ("never miss my class" is always going), "it's been ages since I" negates what
# follows, "No way!" is surprise. Each: (pattern, plain words, the words it says "not" of: a fact that
# uses one of them as said ("misses the class") still drops the negation).
APOSTROPHE = "['’]"
MISSING = "miss misses missed missing skip skips skipped skipping"
IDIOMS = tuple((re.compile(pattern, re.IGNORECASE), plain_words, frozenset(denied.split()))
               for pattern, plain_words, denied in (
    (rf"\b(?:can\s*not|can{APOSTROPHE}t|cannot) get enough of\b", "love", "enough"),
    (r"\bnever (?:miss|skip)(?:es|s|ped|ed)?\b", "always attend", MISSING),
    (rf"\b(?:have|has)(?: not|n{APOSTROPHE}t) (?:missed|skipped) (?:a single|one single|a|one)\b", "attended every",
     MISSING),
    (rf"\b(?:do|does|did)(?: not|n{APOSTROPHE}t) (?:miss|skip) (?:a single|one single)\b", "attend every", MISSING),
    (r"\bnot (?:a|one|a single) (day|week|month|year|morning|evening|night|weekend) (?:goes|went|passes) by without"
     r"(?: me| us)?\b", r"every \1 I", "without"),
    (rf"(?:\s+not|n{APOSTROPHE}t) far from\b", " near", "far"),
    (rf"\bit(?:{APOSTROPHE}s| is| has) been (?:a (?:long )?while|a long time|ages|years|months|weeks|forever"
     r"|(?:so|too) long) since (i|we)(?: last)?\b", r"\1 have not lately", ""),
    (r"^\W*no way\s*[!,.]+", "", ""),
    (r"\blong time no (?:see|chat|talk|speak|hear)\b", "hello", ""),  # a greeting
    (rf"\b(?:i(?:{APOSTROPHE}ll| will) be honest|to be honest|i (?:have to|must) say)\b", "honestly", ""),  # no plan
))
# A past time ("when I was little", "as a kid") makes the "would" of its sentence a habit, not a wish.
PAST_TIME = re.compile(r"\b(?:when (?:i|we|he|she|they|my \w+) (?:was|were) (?:little|young|small|younger"
                       r"|a (?:kid|child|boy|girl|teen|teenager|student))"
                       r"|as (?:a|an) (?:kid|child|boy|girl|teen|teenager|student)"
                       r"|growing up|back then|back in the day|in those days)\b,?\s*", re.IGNORECASE)
# The user's own past time, in a sentence whose verb is present: "The user loves dancing with their friends when the
# user was younger" (SmolLM2, of "I loved taking lessons ... when I was younger"): a past stated as present.
WHEN_YOUNG = re.compile(r"\bwhen (?:i|we) (?:was|were) (?:little|young|small|younger"
                        r"|a (?:kid|child|boy|girl|teen|teenager|student))\b", re.IGNORECASE)
# Words before it that make it the time of a memory, not of a present act: "I remember when I was a kid",
# "photos from when I was little", "I have loved it since ...", "I used to".
RECALLED = frozenset("remember remembers recall recalls miss misses remind reminds memory memories back from of "
                     "about since used would".split())
HABITUAL = re.compile(rf"\b(i|we|he|she|they)(?: would|{APOSTROPHE}d) (?!(?:like|love|want|rather|prefer|have|be)\b)",
                      re.IGNORECASE)
# What makes a clause a wish, plan, condition, guess or the future rather than a fact.
MODAL_SOURCE = re.compile(r"\b(?:would|want|wants|wanna|wish|wishes|hope|hopes|hoping|dream of|dream about"
                          # "thinking about moving" plans; "can't stop thinking about the screenplay", "got me
                          # thinking of my old hiking pics" remember
                          r"|dreaming|plan to|plans to|planning|planned to|think about"
                          r"|(?<!stop )(?<!me )thinking (?:about|of)(?! (?:my|the|our|his|her|their|you|those|these)\b)"
                          r"|considering|consider|might|maybe|perhaps|someday|one day|should|will|gonna"
                          r"|going to (?!the\b|a\b|an\b|my\b|our\b|be\b|[a-z]+ing\b)|about to|tomorrow"
                          r"|next (?:week|month|year|time|summer|spring|autumn|fall|winter|weekend)|soon|later"
                          r"|intend|intends|aim to|look forward|looking forward|eager to|keen to|dying to"
                          # the news a user is excited to tell is done ("excited to tell you I adopted a kitten")
                          r"|(?:excited to|(?:can not|ca not|cannot) wait)"
                          r"(?! to (?:tell|share|show|let)\b| (?:tell|share|let)\b)"
                          r"|would love|would like|hopefully"
                          r"|need to|needs to|have to|gotta)\b")  # what must be done is not done yet
MODAL_FACT = re.compile(r"\b(?:if|when|whenever|would|will|might|may|could|should|going to|gonna|about to"
                        r"|thinking|thinks about|working (?:on [a-z]+ing|towards?)|looking forward|looks forward"
                        r"|looking into|looks into|looking for|next|upcoming|soon|future|someday|tomorrow|later"
                        r"|ready to|(?:can not|ca not|cannot) wait|likely|willing"
                        r"|(?:want|wish|hope|hoping|dream|plan|consider|intend|aim|aspir|excite|eager|keen|interest|anticipat"
                        r"|enthusias|fascinat"
                        r"|curious|ask|wonder|question|seek|need|advice|advis|request|suggest|recommend|goal|determin|desir"
                        r"|encourag|invit|offer|possibl|believ|emphasi|agree|idea)\w*|open to|perhaps|maybe)\b")
# What makes a fact a plan by its form (a wish is MODAL_FACT's): "will be visiting the park this weekend".
PLAN_FACT = re.compile(r"\b(?:will|gonna|going to (?!the\b|a\b|an\b|my\b|our\b|their\b|be\b)|plans? to|planning to"
                       r"|about to|tomorrow|this weekend|soon|upcoming"
                       r"|next (?:week|month|year|weekend|summer|spring|autumn|fall|winter)"
                       # a wish by its form: "would love to visit the park" from a user who wished nothing
                       r"|would (?:love|like) to|wants? to|wish(?:es)? to|hopes? to|hoping to|dreams? (?:of|about)"
                       r"|longs? to|eager to|keen to)\b")
# ... and a source that speaks of what is to come in other words: "can't wait to", "let's", "on my to-do list".
TO_COME = re.compile(r"\b(?:(?:ca|can) not wait|can|let s|to do list|bucket list|wish list)\b")
LEADING_PROGRESSIVE = re.compile(r"(?:^|[.!?]\s+)(?:still |definitely |just |now )?[a-z]+ing\b", re.IGNORECASE)
# "I came back with news that I want to share": the wish is the relative clause's, not the coming back's.
RELATIVE_WISH = re.compile(r"\b(?:that|which) (?:i|we) (?:want|wanna|wish|hope|plan|intend|would)\b")
# "Remember the engineering project? I finally wrapped it up": a question that asks nothing of what it names.
RECALLING = re.compile(r"^\W*(?:do you |you )?remember\b", re.IGNORECASE)
# "I'll never forget our trip": remembering, a future that speaks of the past, not a plan.
REMEMBERING = re.compile(r"\b(?:will|would) (?:never forget|always remember)\b")
CONDITION = re.compile(r"(?<!even )(?<!as )(?<!what )\bif\b")
# "Hey Nate," "Thanks Mel!": the person spoken to, not the clause's subject.
VOCATIVE = re.compile(r"^\W*(?:(?:hey|hi|hello|thanks|thank you|yeah|yes|wow|oh|sure thing|congrats|aw+)\W+)*"
                      r"[A-Z][\w'’]*\s*[,!]\s*", re.IGNORECASE)
# A preference of one thing over another: "prefers light beer over dark beer".
PREFERENCE = re.compile(r"\bprefer(?:s|red|ring)? (?P<preferred>.+?) (?:over|to|rather than|instead of|more than) "
                        r"(?P<passed_over>.+)$")
PROGRESSIVE = re.compile(r"\b(?:i am|we are|am|are|is)\s+(?!going to\b)[a-z]+ing\b")
# Seeking a thing and having it: "I got a temp job" is no "looking for a job" (normalised words).
SEEKING = re.compile(r"\b(?:look(?:s|ed|ing)?(?: out)? for|search(?:es|ed|ing)?(?: for)?|seek(?:s|ing)?"
                     r"|hunt(?:s|ed|ing)? for|on the hunt for|(?:trying|try|tries|tried) to find)\b")
HAVING = re.compile(r"\b(?:got|found|bought|landed|received|have|has|own|owns)\b")
STAND_INS = frozenset("one ones it something somewhere someone".split())  # a sought thing named elsewhere
# Words by which a user speaks of a search of theirs, or of a want a search may come from; a fact's search the
# user's words give none of is the model's ("you'd love this novel" -> "is looking for a novel", SmolLM2).
SEEKING_SAID = re.compile(r"\b(?:look\w*|search\w*|seek\w*|hunt\w*|find\w*|lookout|after|brows\w*|shop\w*|want\w*"
                          r"|wanna|need\w*|wish\w*|hop(?:e|es|ing)|try\w*|tried|interest\w*|plan\w*|consider\w*"
                          r"|check\w*|explor\w*|options?|ideas?|recommendations?|suggestions?|advice|tips)\b")
FUTURE_TIME = re.compile(r"\b(?:on (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)|this "
                         r"(?:weekend|evening|afternoon)|tonight|next|tomorrow|soon)\b")
PRESENT_BE = frozenset("am is are".split())
IRREGULAR_PAST = frozenset("""
went flew took got made did had was were began bought brought built came caught chose drove ate fell felt
found gave grew heard held kept knew left lost met paid put ran read rode said sang sat saw sent shot sold
spent spoke stood swam taught thought told threw understood woke won wore wrote became broke
""".split())

NUMBER_WORDS = {word: value for value, word in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())}
NUMBER_WORDS.update({"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
                     "ninety": 90, "hundred": 100, "thousand": 1000})
# Words a source may say a number with that a fact uses loosely ("a pair of shoes" is not "2 shoes").
SOURCE_NUMBERS = {"dozen": 12, "decade": 10, "decades": 10, "couple": 2, "pair": 2, "twice": 2, "half": 30,
                  "quarter": 15}
ORDINALS = {word: value for value, word in enumerate(
    "zeroth first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth "
    "fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth twentieth".split())}
ORDINALS.update({"thirtieth": 30})
TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
        "ninety": 90}
ONE_WORDS = frozenset("a an one single".split())  # "I have a cat" says 1 cat
# Paraphrase relations the embedder is weak at: a source word (by its root) -> words a faithful fact may
# use for it ("I relocated to Denver" -> "lives in"; "I'm vegan" -> "does not eat animal products").
# One direction and one polarity each; kept small: the embedder judges the rest.
IMPLIES = {word_root: implied.split() for word_root, implied in {
    "mov": "live", "settl": "live", "grew": "raise", "rais": "grow", "born": "birth",
    "vegan": "eat meat animal product dairy", "vegetarian": "eat meat", "turn": "age year old",
    "beat": "prefer", "finish": "complete", "wrapp": "finish complete", "sprain": "injure hurt",
    "teach": "teacher", "marry": "wife husband spouse", "wedding": "marry", "secondhand": "used",
    "sick": "ill", "adopt": "have", "bought": "own have", "got": "have",
}.items()}
I_AM_A = re.compile(r"\bi am (?:a|an)\b")  # "I'm a staff nurse": a fact may say "works as"
DIGITS = re.compile(r"\d+")
ARTICLES = frozenset("a an the".split())
LIST_WORDS = frozenset("and or".split())
# Links between a word and what the fact says of it where another value is a change, not a paraphrase:
# "the user's car is blue" where the user said "my car is red", "works as a lawyer" for "as a chef".
COPULAS = (["is"], ["are"], ["was"], ["as"])
MAX_LINK = 4  # a verb and its object are at most this many words apart ("works as a nurse")
# Words by which a clause refers to a place or thing named in another ("My sister lives there").
# Verbs whose object does what follows: "helped me pass" says the user passed ("wants me to" does not).
IMPLICATIVE = frozenset("help helps helped helping let lets letting make makes made making".split())
RELATIVES = frozenset("who whose whom which".split())
# Verbs that bid someone else do a thing ("I'd like you to join me", "I told him to rest", "I'd love for you to
# come"): the thing is that person's act, not the user's.
BIDDING = frozenset("""
want wants wanted like love need needs needed ask asks asked tell tells told invite invites invited encourage
encourages encouraged urge urged remind reminds reminded teach teaches taught help helps helped expect expected
wait
""".split())
BIDDEN = frozenset("you him her them everyone everybody someone".split())  # whom a verb bids, as a pronoun
REFERENCES = frozenset("there here it its that this them those one".split())


@dataclass(frozen=True)
class Clause:
    """One clause of a text, as the checks see it."""

    text: str  # normalised, the user named "i"
    words: tuple[str, ...]
    owner: str  # "user", "people" (the user's son, a colleague...), "other" (he, Bob, his dog), "" unknown
    path: tuple[str, ...]  # for "people": whose ("colleague", "husband"); for "other" with a possessive too
    subject_size: int  # how many leading words are the subject
    negated: bool
    modal: str  # "" for a plain statement; else "question", "condition", "wish or plan"
    future: bool  # a plan by its time ("I'm flying to Tokyo on Friday")
    denied: frozenset[str] = frozenset()  # roots an idiom of its sentence says "not" of (IDIOMS)
    wish_from: int = 0  # where a relative clause's wish begins ("news that I want to share"), else 0

    @property
    def past(self) -> bool:
        """Whether the clause's verb is in the past ("went", "finished", "had", "would practise" of a habit)."""
        return speaks_of_past(self.words[self.subject_size:])

    @property
    def former(self) -> bool:
        """Whether its only negation is "used to": a past habit or state, which a past-tense clause says too."""
        return " used to " in f" {self.text} " and not negates(f" {self.text} ".replace(" used to ", " "))

    @property
    def predicate_roots(self) -> frozenset[str]:
        return frozenset(root(w) for w in self.words[self.subject_size:] if w not in FREE_WORDS)

    @property
    def roots(self) -> frozenset[str]:
        return frozenset(root(w) for w in self.words) | implied_roots(self.text)


def speaks_of_past(predicate: tuple[str, ...] | list[str]) -> bool:
    """Whether a predicate's first words are in the past; a reporting verb's past is when the user said
    it ("expressed excitement about the concert" is no concert past), so the words after it decide."""
    if predicate and predicate[0] in REPORTED:
        predicate = predicate[1:]
    # after a present "is", a participle is a state ("is concerned about", "are determined to"), no past
    return any(is_past(w) and (w in IRREGULAR_PAST or i == 0 or predicate[i - 1] not in PRESENT_BE)
               for i, w in enumerate(predicate[:3]))


def is_past(word: str) -> bool:
    return word in IRREGULAR_PAST or (word.endswith("ed") and len(word) > 4 and word not in FREE_WORDS)


def as_first_person(text: str) -> str:
    """A third-person fact in the user's own voice: "The user's sister" -> "my sister" (the parse and
    the embedder then compare like with like)."""
    text = re.sub(r"\b[Tt]he user['’]s\b|\b[Uu]ser['’]s\b", "my", text)
    return re.sub(r"\b[Tt]he user\b", "I", text)


def clauses(text: str) -> list[Clause]:
    """`text` split into clauses, each parsed (who it is about, negation, modality)."""
    found = []
    for sentence in (s for whole in SENTENCE.split(as_first_person(text)) for s in AS_ROLE.split(whole) if s):
        sentence = TAG_QUESTION.sub(".", sentence.rstrip())
        question = sentence.endswith("?") and not RECALLING.match(sentence)
        sentence, denied = plain(sentence)
        for part in (piece for split in BOUNDARY.split(sentence) if split for piece in spliced(split)):
            if part and part.strip():
                clause = parse_clause(part, question, denied)
                if clause.words:
                    found.append(clause)
    return found


def spliced(part: str) -> list[str]:
    """A clause split at its comma splices: where what stands before the comma is a clause of its own (a
    subject or a verb, and no subordinator first), its negation and modality end at the comma."""
    pieces = COMMA_SPLICE.split(part)
    joined = [pieces[0]]
    for piece in pieces[1:]:
        words = [w for w in normalised(joined[-1]).split() if w not in OPENERS]
        if words and words[0] not in SUBORDINATORS and set(words) & (SUBJECTS | AUXILIARIES):
            joined.append(piece)
        else:
            joined[-1] = f"{joined[-1]}, {piece}"
    return joined


def plain(sentence: str) -> tuple[str, frozenset[str]]:
    """A sentence with its idioms in plain words (IDIOMS; a "would" of a past time is a habit), and the
    roots the idioms say "not" of."""
    if PAST_TIME.search(sentence) and HABITUAL.search(sentence):
        sentence = HABITUAL.sub(r"\1 ", PAST_TIME.sub("", sentence))
    denied: set[str] = set()
    for pattern, plain_words, words_denied in IDIOMS:
        if pattern.search(sentence):
            sentence = pattern.sub(plain_words, sentence)
            denied.update(root(word) for word in words_denied)
    return sentence, frozenset(denied)


def parse_clause(raw: str, question: bool = False, denied: frozenset[str] = frozenset()) -> Clause:
    if VOCATIVE.match(raw) and not re.match(r"\W*(?:i|we|my|our)\b", raw, re.IGNORECASE):
        raw = VOCATIVE.sub("", raw, count=1)
    text = normalised(raw)
    words = tuple(text.split())
    owner, path, size = subject_of(words, raw)
    negated = negates(text)
    modal = "question" if question else "condition" if CONDITION.search(text) else \
        "wish or plan" if wishes(text) else ""
    future = bool(PROGRESSIVE.search(text) and FUTURE_TIME.search(text))
    relative = RELATIVE_WISH.search(text) if modal == "wish or plan" else None
    wish_from = len(text[: relative.start()].split()) if relative and not wishes(text[: relative.start()]) else 0
    return Clause(text, words, owner, path, size, negated, modal, future, denied, wish_from)


def wishes(text: str) -> bool:
    """Whether a normalised text wishes or plans (MODAL_SOURCE), not only remembers ("I'll never forget")."""
    return bool(MODAL_SOURCE.search(REMEMBERING.sub(" ", text)))


def negates(text: str) -> bool:
    """Whether a normalised clause is negated (see NEGATION_WORDS, NOT_NEGATING)."""
    meant = f" {NOT_NEGATING.sub(' ', text)} "
    return bool(set(meant.split()) & NEGATION_WORDS) or any(f" {p} " in meant for p in NEGATION_PHRASES)


def subject_of(words: tuple[str, ...], raw: str) -> tuple[str, tuple[str, ...], int]:
    """(owner, path, subject size) of a clause from its first words (see Clause)."""
    start = 0
    while start < len(words) and start < 4 and (words[start] in OPENERS or words[start] in LEADING_MODALS):
        start += 1
    if start >= len(words):
        return "", (), 0
    first = words[start]
    span = []
    for word in words[start: start + 6]:
        if word in AUXILIARIES or (span and word not in PEOPLE and word not in ("s", "and", "my", "our")
                                   and not is_name(word, raw)):
            break
        span.append(word)
    size = start + max(len(span), 1)
    if first in USER_WORDS or " and i" in f" {' '.join(span)} " or " and me" in f" {' '.join(span)} ":
        return "user", (), size
    people = tuple(PERSON_SYNONYMS.get(word, word) for word in span if word in PEOPLE)
    if first in ("my", "our"):
        if people:
            return "people", people, size
        # "my mentor", "my car": someone or something of the user's, not the user ("My mentor retired"
        # does not say the user retired); "my favourite food is sushi" is still the user's taste
        return "thing", (), start + noun_end(words[start: start + 4])
    if first in POSSESSIVE_OTHERS:
        return "other", people, size
    if first in THIRD_PERSON or is_name(first, raw):
        return "other", (), size
    if first in DETERMINERS:
        return "thing", (), start + noun_end(words[start: start + 4])
    return "", (), 0


def noun_end(noun: tuple[str, ...]) -> int:
    """How many of a noun phrase's first words ("the new mayor", "my car") are its subject: up to its verb."""
    return next((k for k in range(2, len(noun)) if noun[k] in AUXILIARIES or is_past(noun[k])
                 or noun[k].endswith("s")), len(noun) - 1 if len(noun) > 2 else len(noun))


def is_name(word: str, raw: str) -> bool:
    """Whether `word` is written capitalised in `raw` other than at a sentence's start, after its opening
    punctuation too ("[Shares a photo ...]", "(Laughs)"): a name."""
    return bool(re.search(rf"(?<![.!?]\s)(?<!^)\b{re.escape(word)}\b", raw, re.IGNORECASE)) and any(
        match.group(0)[0].isupper() and raw[: match.start()].strip(OPENING_MARKS) and word not in ("i",)
        for match in re.finditer(rf"\b{re.escape(word)}\b", raw, re.IGNORECASE))


OPENING_MARKS = " \t\n[(\"'*_“‘"  # what may stand before a sentence's first word


def implied_roots(text: str) -> frozenset[str]:
    """The roots of the words a faithful paraphrase of `text` may use besides its own (IMPLIES)."""
    found: set[str] = set(roots_of(plain(text)[0]))  # "can't get enough of" says "love"
    for word_root in roots_of(text):
        found.update(root(word) for word in IMPLIES.get(word_root, ()))
    if I_AM_A.search(normalised(as_first_person(text))):
        found.update(root(word) for word in ("work", "job"))
    return frozenset(found)


@dataclass(frozen=True)
class Claim:
    """What a fact asserts, as the checks see it: its clauses, the first one's subject."""

    parts: list[Clause]
    text: str
    names: frozenset[str]  # names, places, months (names_in)
    modal: bool  # says wish, plan, condition, question or future itself
    past: bool


def claim_of(fact: str) -> Claim:
    parts = clauses(fact) or [parse_clause(fact)]
    text = normalised(as_first_person(fact))
    words = text.split()
    past = speaks_of_past(words[parts[0].subject_size:])
    return Claim(parts, text, frozenset(names_in(fact)), bool(MODAL_FACT.search(text)), past)


# -- names, numbers and dates --------------------------------------------------------------------------
def numbers_in(text: str, source: bool = False) -> set[int]:
    """The numbers a text states, spelled or in digits ("twenty-first" 21, "10k" 10, "3rd" 3);
    a source's "a cat" states 1 too."""
    words = normalised(text.replace("-", " ")).split()
    found: set[int] = set()
    for i, word in enumerate(words):
        found.update(int(d) for d in DIGITS.findall(word) if len(d) <= 6)
        if word in TENS and i + 1 < len(words) and (words[i + 1] in NUMBER_WORDS or words[i + 1] in ORDINALS):
            unit = NUMBER_WORDS.get(words[i + 1], ORDINALS.get(words[i + 1], 0))
            if unit < 10:
                found.add(TENS[word] + unit)
        if word in NUMBER_WORDS:
            found.add(NUMBER_WORDS[word])
        if word in ORDINALS:
            found.add(ORDINALS[word])
        if source and word in ONE_WORDS:
            found.add(1)
        if source and word in SOURCE_NUMBERS:
            found.add(SOURCE_NUMBERS[word])
        if word in ("half", "quarter") and i + 2 < len(words) and words[i + 1] in ("past", "to"):
            found.add(0)
    return found


# Days and months as people shorten them (not "sat", "sun", "wed", "mar", "mon": words of their own).
ABBREVIATED = {"tue": "tuesday", "tues": "tuesday", "thu": "thursday", "thur": "thursday", "thurs": "thursday",
               "fri": "friday", "jan": "january", "feb": "february", "apr": "april", "jun": "june", "jul": "july",
               "aug": "august", "sep": "september", "sept": "september", "oct": "october", "nov": "november",
               "dec": "december"}
MIN_TYPO_LENGTH = 6  # a name this long may be misspelt by a letter; shorter ones differ as names do


def misspelt(name: str, word: str) -> bool:
    """Whether `word` is `name` typed with two letters swapped or one letter more or less ("Francsico",
    "Xeonoblade"); one letter for another is another name ("Christine" is not "Christina")."""
    if min(len(name), len(word)) < MIN_TYPO_LENGTH or abs(len(name) - len(word)) > 1 or name == word:
        return False
    if len(name) == len(word):
        wrong = [i for i, (a, b) in enumerate(zip(name, word, strict=True)) if a != b]
        return len(wrong) == 2 and wrong[1] == wrong[0] + 1 and name[wrong[0]] == word[wrong[1]] \
            and name[wrong[1]] == word[wrong[0]]
    longer, shorter = (name, word) if len(name) > len(word) else (word, name)
    return any(longer[:i] + longer[i + 1:] == shorter for i in range(len(longer)))


def names_in(text: str) -> list[str]:
    """The words a fact writes capitalised that are not its first word nor the user: names,
    places, months, days, brands."""
    names = []
    for match in re.finditer(r"(?<![\w'’])([A-Z][\w'’-]*)", text):
        word = match.group(1)
        before = text[: match.start()].rstrip()
        if not before or before.endswith((".", "!", "?", ":")):
            continue  # a sentence's first word
        if word in ("I", "The", "User") or normalised(word) in ("user", "user s"):
            continue
        names.extend(part for part in normalised(word).split() if len(part) > 1)  # not "s", not initials
    return names


def detail_problem(fact: str, source: str) -> str | None:
    """Why a fact's names, numbers or dates are not the source's, or None."""
    roots = roots_of(source)
    said = set(normalised(source).split())
    said |= {ABBREVIATED[word] for word in said if word in ABBREVIATED}  # "last Fri" says Friday
    names = names_in(fact)
    for name in names:
        if name not in said and not known(root(name), roots) and name not in NUMBER_WORDS and name not in ORDINALS \
                and not any(misspelt(name, word) for word in said):
            return f"changes a name, place or date: {name.capitalize()} is not in what the user said"
    missing = numbers_in(fact) - numbers_in(source, source=True) - {0}
    listed = {name for name in names if name in said}
    if len(listed) >= 2:  # a count of the names the fact lists, all said: "three pets - Max, Daisy and Ned"
        missing.discard(len(listed))
    if missing:
        return f"changes a number or date: {min(missing)} is not in what the user said"
    return None


# -- matching a fact to the clause that says it ---------------------------------------------------------
def best_clauses(mine: Clause, names: frozenset[str], parts: list[Clause]) -> list[Clause]:
    """The source clauses that say most of a fact's clause (names and numbers weigh most, then shared
    words), first said first; several when they say as much."""
    fact_roots = frozenset(root(w) for w in mine.words if w not in FREE_WORDS) - NEGATION_ROOTS
    fact_names = {name for name in names if name in mine.words} | {str(n) for n in numbers_in(mine.text)}
    best: list[Clause] = []
    best_score = 0.0
    for part in parts:
        shared = sum(1 for word_root in fact_roots if known(word_root, part.roots))
        named = sum(1 for name in fact_names if name in part.words)
        score = shared + 3 * named
        if score > best_score:
            best, best_score = [part], score
        elif score == best_score and best:
            best.append(part)
    return best


NEGATION_ROOTS = frozenset(root(w) for w in NEGATION_WORDS)
# Negations with no content of their own; the others ("quit", "hate", "lack") say what is negated too.
BARE_NEGATION_ROOTS = frozenset(root(w) for w in "not never no nothing none nobody neither nor without".split())
OPENER_ROOTS = frozenset(root(w) for w in ADVERB_OPENERS)  # "apparently" in a fact is not its act


def meaning_problem(fact: str, source: str, superseding: bool = False, folding: bool = False) -> str | None:
    """Why `fact` says something other than `source` (the user's words, or the texts a rewrite was made
    from), or None; the reason names the kind. `superseding`: the fact may negate (an update);
    `folding`: it may put a new value where the source has an old one (a summary folding in new facts)."""
    if COPIED_AFTER_USER.match(fact):
        return "another person's or no one's: a sentence copied after \"The user\""
    parts = clauses(source)
    if not parts:
        return None
    if tense := tense_problem(fact):
        return tense
    if not (superseding or folding) and unstated_plan(fact, source):
        return f"a plan the user did not state: they said {clip(source.strip())}"
    if not (superseding or folding) and (searching := search_problem(fact, source)):
        return searching
    claim = claim_of(fact)
    # an update replaces the old memory's value ("lives in Berlin" for "lives in Paris"): not a mix
    reason = None if superseding or folding else (mixed_problem(claim, parts, capitalised(source))
                                                 or causer_problem(claim, parts))
    for mine in claim.parts:
        if reason:
            return reason
        subject = mine if mine.owner else claim.parts[0]
        tied = best_clauses(mine, claim.names, parts)
        if not tied:
            # a clause that shares nothing with what the user said may still be close in meaning; a "not" in
            # it, where the user's words negate nothing, is one the user never said ("wanted to try yoga, but
            # never had the chance" of a user who "finally took the plunge"; "No, I didn't" may say it)
            if mine.negated and not superseding and not negates(normalised(source)):
                reason = f"adds a negation: the user said nothing like {clip(mine.text)}"
            continue
        clause = tied[0]
        negation = None if superseding else negation_problem(mine, clause, parts, claim.names)
        # what the clause says of its subject: "my sister Ana is visiting next week" plans the visit,
        # not the sister; of clauses that say the fact as much, the user's wish in any is not stated as done
        # ("I bought running shoes and I want to run a marathon": "ran a marathon in running shoes")
        wishes = [part for part in tied[1:] if (part.owner, part.modal) == ("user", "wish or plan")]
        modality = next((problem for part in [clause, *wishes]
                         if (problem := modality_problem(claim, mine, part, folding)) and about_predicate(mine, part)),
                        None)
        # of clauses that say it as much, one about the fact's subject may be the one it reports
        owned = any(part.owner == subject.owner and same_people(part.path, subject.path) for part in tied[1:]) or (
            subject is mine and said_of_self(mine, clause, parts))
        reason = ((None if owned else person_problem(subject, mine, clause)) or negation or modality
                  or congratulated_problem(subject, mine, tied) or bidden_problem(mine, parts)
                  or (None if superseding or folding else merge_problem(mine, claim.names, parts)))
    return reason


def tense_problem(fact: str) -> str | None:
    """Why a fact states a past of the user's as present (WHEN_YOUNG after no past verb), or None."""
    for sentence in SENTENCE.split(as_first_person(fact)):
        found = WHEN_YOUNG.search(sentence)
        if not found:
            continue
        before = re.findall(r"[\w'’]+", sentence[:found.start()].lower())
        if before and not any(is_past(w) or w in RECALLED or w.endswith(("'d", "’d")) for w in before):
            return f"a past stated as present: {clip(fact)}"
    return None


def unstated_plan(fact: str, source: str) -> bool:
    """Whether a fact states a plan ("The user will be visiting the national park this weekend") where the
    source speaks of no wish, plan or time to come at all ("Last Friday we went to a national park")."""
    said = normalised(source)
    return bool(PLAN_FACT.search(REMEMBERING.sub(" ", normalised(as_first_person(fact))))) and not (
        MODAL_SOURCE.search(said) or FUTURE_TIME.search(said) or PROGRESSIVE.search(said)
        or TO_COME.search(said) or LEADING_PROGRESSIVE.search(source))


def search_problem(fact: str, source: str) -> str | None:
    """Why a fact's search is not the user's, or None: they say they have what it says they seek ("I got a temp
    job to help" -> "has been looking for a job") and no search of theirs names it, or they speak of no search
    or want at all."""
    said = normalised(source)
    sought = [run for _, run in objects(SEEKING, normalised(as_first_person(fact)))]
    if not sought:
        return None
    if not SEEKING_SAID.search(said):
        return f"a search the user did not speak of: they said {clip(source.strip())}"
    # "I have a job but I'm looking for a new one": what is sought is not named (within its own clause)
    if any(set(piece[found.end():].split()[:4]) & STAND_INS
           for piece in map(normalised, re.split(r"[.!?,;:]", source)) for found in SEEKING.finditer(piece)):
        return None
    searches = objects(SEEKING, said)
    had = objects(HAVING, said)
    for run in sought:
        head = run[-1]  # "a new job": job
        if not any(known(head, roots) for _, roots in searches) and not re.search(
                rf"\b{re.escape(head)}\w* (?:hunt|search)", said):  # "job hunting" names it first
            phrase = next((phrase for phrase, roots in had if known(head, roots)), None)
            if phrase:
                return f"a search for what the user has: they said {clip(phrase)}"
    return None


def objects(verb: re.Pattern[str], text: str, reach: int = 4) -> list[tuple[str, tuple[str, ...]]]:
    """For each match of `verb` in a normalised text, the words up to its object and the roots of the object
    (the first run of content words in the `reach` words after it: "got a temp job to": temp, job)."""
    found = []
    for match in verb.finditer(text):
        after = text[match.end():].split()[:reach]
        start = next((i for i, word in enumerate(after) if word not in FREE_WORDS), None)
        if start is None:
            continue
        end = next((i for i in range(start, len(after)) if after[i] in FREE_WORDS), len(after))
        found.append((" ".join([match[0], *after[:end]]), tuple(root(word) for word in after[start:end])))
    return found


def about_predicate(mine: Clause, clause: Clause) -> bool:
    """Whether a fact's clause speaks of what the source clause says of its subject, not of the subject
    alone ("my sister Ana is visiting next week" plans the visit, not the sister); "The user said thanks"
    reports what the user said, not a plan."""
    return known_any(mine.predicate_roots, clause.predicate_roots) and not reports(mine)


def merge_problem(mine: Clause, names: frozenset[str], parts: list[Clause]) -> str | None:
    """Whether a fact's clause gives its subject a name the user said only of someone else, in another
    clause: "Max plays the violin in Denver" from "I relocated to Denver, and my son Max plays the
    violin". A clause that speaks of the fact's subject too ("I took my kids to Yellowstone"), or one
    whose subject is a pronoun, may be about it; a clause about the subject that says "there" or "it"
    may name the place or thing so (the reference resolved, not a merge)."""
    who = subject_words(mine)
    if not who and mine.words and any(person_word(mine.words[0]) in subject_words(part) for part in parts):
        who = frozenset({person_word(mine.words[0])})  # "Max playing ...": a fact's first word, capitalised anyway
    if not who:
        return None
    own = [part for part in parts if subject_words(part) & who and part.predicate_roots]  # says something of them
    if not own or any(set(part.words[part.subject_size:]) & REFERENCES for part in own):
        return None
    predicate = mine.words[mine.subject_size:]
    # what follows "who" or "which" is said of the noun before it ("misses their aunt, who passed away in May")
    predicate = predicate[: next((i for i, w in enumerate(predicate) if w in RELATIVES), len(predicate))]
    for name in sorted(names & set(predicate)):
        holders = [part for part in parts if name in part.words]
        if holders and all(subject_words(part) and not subject_words(part) & who
                           and not {person_word(w) for w in part.words} & who for part in holders):
            whose = " ".join(holders[0].words[: holders[0].subject_size])
            return (f"mixes two clauses: the user said {name.capitalize()} of {whose!r}, "
                    f"not of {' '.join(mine.words[: mine.subject_size]) or mine.words[0]!r}")
    return None


def subject_words(clause: Clause) -> frozenset[str]:
    """Who a clause is about, as words to compare: {"i"} for the user, the person's words ("son", "max")
    for a person of the user's or a named one; empty when unknown (a pronoun, a thing)."""
    if clause.owner == "user":
        return frozenset({"i"})
    if clause.owner not in ("people", "other"):
        return frozenset()
    words = [w for w in clause.words[: clause.subject_size] if w not in OPENERS and w not in LEADING_MODALS]
    if not words or words[0] in THIRD_PERSON:
        return frozenset()
    return frozenset(person_word(w) for w in words if w not in FREE_WORDS and w not in ("my", "our", "s", "and"))


def person_word(word: str) -> str:
    return "i" if word in USER_WORDS else PERSON_SYNONYMS.get(word, word)


def person_problem(subject: Clause, mine: Clause, clause: Clause) -> str | None:
    """Whether a fact's clause (`mine`, about `subject`'s subject) gives the user what the source's
    clause says of someone else."""
    if subject.owner not in ("user", "people") or clause.owner not in ("other", "people", "thing"):
        return None
    if reports(mine):
        return None
    whose = [w for w in clause.words[: clause.subject_size] if w not in OPENERS and w not in LEADING_MODALS]
    if any(w in mine.words[mine.subject_size:] for w in whose if w not in FREE_WORDS and w not in DETERMINERS):
        return None  # "The user misses their aunt, who passed away": the fact says whose it is
    if clause.owner == "people" and subject.owner == "people" and same_people(subject.path, clause.path):
        return None
    if clause.owner == "other" and subject.owner == "people" and not clause.path:
        return None  # "they loved it" may be the user's kids: who "they" are is not known
    said = clause.predicate_roots
    told = [word_root for word_root in mine.predicate_roots if word_root not in NEGATION_ROOTS | OPENER_ROOTS]
    if subject.owner == "user" and not subject.path and users_act(mine, clause):
        return None  # "my tutor helped me pass my test": the passing is the user's
    # a noun phrase's act ("the trip was amazing") is the user's only when the fact copies it nearly whole
    share = 0.8 if clause.owner == "thing" else 0.5
    if clause.owner == "thing" and (subject.owner != "user" or len(told) < 2):
        return None
    if clause.words[:1] in (("that",), ("this",)) and {"me", "my", "mine", "myself"} & set(clause.words[1:]):
        return None  # "That's a close friend of mine who helped me get this painting published": the user's act too
    if told and sum(1 for word_root in told if known(word_root, said)) >= share * len(told):
        whose = " ".join(clause.words[: clause.subject_size])
        given = "the user" if not subject.path else "the user's " + " ".join(subject.path)
        return f"another person's: the user said it of {whose!r}, not of {given}"
    return None


def said_of_self(mine: Clause, clause: Clause, parts: list[Clause]) -> bool:
    """Whether the user says the fact's verb of themselves in a clause of their own, where the clause it is
    matched to only describes its object: "I chose them 'cause they help LGBTQ+ folks" -> "The user chose an
    agency that helps LGBTQ+ folks" (not "I play guitar and my son plays violin" -> "plays the violin")."""
    if mine.owner != "user" or mine.path:
        return False
    verb = first_verb(mine)
    if verb is None or known(verb, clause.predicate_roots):
        return False
    return any(part.owner == "user" and not part.path and known(verb, part.predicate_roots) for part in parts)


def first_verb(mine: Clause) -> str | None:
    """The root of a clause's first content word after its subject (its verb, as far as words tell), or None."""
    verbs = (root(w) for w in mine.words[mine.subject_size:] if w not in FREE_WORDS)
    return next((word_root for word_root in verbs if word_root not in OPENER_ROOTS), None)


def told_of_teller(fact: str, said: str, answered: str) -> str | None:
    """The clause of `answered` (the turn the user's words answer) in which its speaker tells of their own act
    that a fact gives the user, by a verb the user's words never use, or None: "I played one with friends two
    days ago" -> "The user has been playing a lot of strategy games" for a user who said "Board games are
    always a blast" (SmolLM2 wrote it)."""
    tellers = [part for part in clauses(answered)
               if part.owner == "user" and not part.path and part.modal != "question"]
    if not tellers:
        return None
    own = roots_of(said) | implied_roots(said)
    for mine in claim_of(fact).parts:
        if mine.owner != "user" or mine.path or reports(mine) or STANCE.match(" ".join(mine.words[mine.subject_size:])):
            continue
        verb = first_verb(mine)
        if verb is None or known(verb, own):
            continue
        told = next((part for part in tellers if known(verb, part.predicate_roots)), None)
        if told:
            return told.text
    return None


def bidden_acts(clause: Clause) -> dict[int, str]:
    """The acts a clause bids someone else do, by their place in its words and their root: "i would like you
    to join me" -> join; "told my son to rest" -> rest; not "asked me to" (the user's act) or "want to" (the
    user's own wish)."""
    words, acts = clause.words, {}
    for i, word in enumerate(words[:-2]):
        if word not in BIDDING:
            continue
        start = i + 1 + (words[i + 1] == "for")  # "would love for you to come"
        end = next((k for k in range(start, min(start + 4, len(words))) if words[k] == "to"), None)
        bidden = set(words[start:end]) if end else set()
        if bidden & (BIDDEN | PEOPLE) and bidden <= BIDDEN | PEOPLE | DETERMINERS | {"my", "our"}:
            at = next((k for k in range(end + 1, min(end + 3, len(words))) if words[k] not in FREE_WORDS), None)
            if at is not None:
                acts[at] = root(words[at])
    return acts


def bids(clause: Clause) -> bool:
    """Whether a clause has a bidding verb with whom it bids ("would like the other speaker to", "helped their
    sister move")."""
    words = clause.words
    return any(word in BIDDING and words[i + 1] in BIDDEN | PEOPLE | POSSESSIVE_OTHERS | DETERMINERS
               for i, word in enumerate(words[:-1]))


def own_acts(clause: Clause) -> frozenset[str]:
    """The roots of a clause's predicate but the acts it bids someone else do ("I sold my car and told my
    brother to sell his": sell is the user's too)."""
    bidden = bidden_acts(clause)
    return frozenset(root(w) for k, w in enumerate(clause.words) if k >= clause.subject_size and k not in bidden)


def bidden_problem(mine: Clause, parts: list[Clause]) -> str | None:
    """Whether a fact gives the user an act the user bade someone else do ("I'd like you to join me" -> "The
    user would love to join in"; "I want you to try the ramen place" -> "The user wants to try it"), where no
    clause of the user's says it of the user too."""
    if mine.owner != "user" or mine.path or reports(mine) or bids(mine):
        return None  # "The user told their son to rest" says the bidding
    told = frozenset(root(w) for w in mine.words[mine.subject_size:])  # "called" too, a free word elsewhere
    users = [own_acts(part) for part in parts if part.owner == "user"]
    for part in parts:
        if any(known(act, told) and not any(known(act, acts) for acts in users) for act in bidden_acts(part).values()):
            return f"another person's: the user bade someone else do it ({clip(part.text)})"
    return None


def congratulated_problem(subject: Clause, mine: Clause, tied: list[Clause]) -> str | None:
    """Whether a fact gives the user what they congratulated the other speaker on: "Congrats on the new
    team! Which team did you sign with?" -> "The user just signed with a new team" (SmolLM2 wrote it)."""
    if subject.owner != "user" or reports(mine):
        return None
    praised = next((part for part in tied if CONGRATULATING.match(part.text)), None)
    return f"another person's: the user congratulated them on it ({clip(praised.text)})" if praised else None


def users_act(mine: Clause, clause: Clause) -> bool:
    """Whether the fact's verb is the one the clause has the user do by a verb that says it was done
    ("helped me pass", "made us laugh"; not "wants me to move", "asked me to")."""
    verbs = [w for w in mine.words[mine.subject_size:] if w not in FREE_WORDS]
    words = clause.words
    acts = {words[i + 2 + (words[i + 2] == "to")] for i in range(len(words) - 3)
            if words[i] in IMPLICATIVE and words[i + 1] in ("me", "us")}
    return bool(verbs) and root(verbs[0]) in {root(w) for w in acts}


def stance_on_answered(fact: str, said: str) -> bool:
    """Whether a fact reports the user's question, interest or view (STANCE) and the user's words point at
    the turn they answer (POINTERS): what it is about may then be named only there."""
    first = claim_of(fact).parts[0]
    return bool(STANCE.match(" ".join(first.words[first.subject_size:]))) and bool(
        POINTERS & set(normalised(said).split()))


def reports(mine: Clause) -> bool:
    """Whether a fact's clause reports the user's words or view ("The user agrees ...", "said ...")."""
    return bool(REPORTING.match(" ".join(mine.words[mine.subject_size:]) or "-"))


def same_people(left: tuple[str, ...], right: tuple[str, ...]) -> bool:
    return [root(w) for w in left] == [root(w) for w in right]


def negation_problem(mine: Clause, clause: Clause, parts: list[Clause], names: frozenset[str]) -> str | None:
    """Whether a fact's clause says the opposite of the source clause it matches: the clause negates what
    the fact asserts, or the fact negates what no clause saying the same thing negates."""
    if NOMINAL_NEGATIVE.search(mine.text):
        return None  # "sad about the lack of resources": a want named, neither said nor denied of anyone
    preferred, passed_over = preference(mine)
    if passed_over and known_any(passed_over, clause.roots):
        # "prefers light beer over dark beer" says a "not" of dark beer: "I don't like dark beer" says it too;
        # "I love dark beer" and "I prefer dark beer to light" turn it around
        said_preferred, _ = preference(clause)
        if known_any(passed_over, said_preferred) or not (clause.negated or known_any(preferred, clause.roots)):
            return f"turns a preference around: the user said {clip(clause.text)}"
        if clause.negated and (not known_any(preferred, clause.roots)
                               or known_any(passed_over, negated_roots(clause, reach=2))):
            return None  # "I don't like dogs, that's why I have cats": prefers cats over dogs
    core = core_roots(mine, names)
    if not mine.negated and core & (negated_by_state(clause) | clause.denied):
        # "I'm vegetarian" -> "eats meat"; "I never miss the bus" -> "misses the bus"
        return f"drops a negation: the user said {clip(clause.text)}"
    if mine.negated == clause.negated or not known_any(core, clause.roots):
        return None
    if (mine.former and said_in_past(clause)) or (clause.former and said_in_past(mine)):
        return None  # "I had a film camera as a kid" is "used to have one"
    if clause.negated:
        scope = negated_roots(clause, reach=2)
        if scope and not known_any(scope, core):
            return None  # the "not" is of something else: "this biz is no cakewalk and confidence is important"
        return f"drops a negation: the user said {clip(clause.text)}"
    # "won't quit" says the "not" of "does not quit": a negating verb the fact shares counts as its content
    negating = {root(w) for w in mine.words if w in NEGATION_WORDS} - BARE_NEGATION_ROOTS
    # a negated clause of the user's says the fact's "not" when it speaks of what the fact negates ("has no
    # idea how to make it happen" is not said by "can't let go of my dream to make a difference")
    scope = negated_roots(mine) | negating
    if any(part.negated or core & negated_by_state(part) for part in parts
           if known_any(scope, part.roots) or 2 * sum(known(r, part.roots) for r in core) >= len(core)):
        return None
    return f"adds a negation: the user said {clip(clause.text)}"


def negated_roots(mine: Clause, reach: int = 1) -> frozenset[str]:
    """The `reach` content roots a clause's first negation stands before ("has no idea how": idea; "does not
    like coffee": like, coffee; "to avoid forgetting tasks": forget; "no longer lives in": live)."""
    for i, word in enumerate(mine.words):
        if word in NEGATION_WORDS:
            # the negation's reach ends with its clause: "no cakewalk and believing in yourself is key"
            scope = itertools.takewhile(lambda w: w not in SCOPE_ENDS, mine.words[i + 1:])
            after = (w for w in scope if w not in NOT_NEGATED)
            return frozenset(root(w) for w in itertools.islice(after, reach))
    return frozenset()


SCOPE_ENDS = frozenset("and but or because since that which who while".split())
NOT_NEGATED = FREE_WORDS | NEGATION_WORDS | {"longer", "up"}  # passed over in its scope ("no longer", "give up")


def preference(mine: Clause) -> tuple[frozenset[str], frozenset[str]]:
    """The roots only a clause's preferred thing has, and those only the thing passed over has ("prefers
    cats over dogs": cat, dog); empty when the clause states no preference of one over another."""
    found = PREFERENCE.search(mine.text)
    if not found:
        return frozenset(), frozenset()
    preferred, passed_over = (frozenset(root(w) for w in found[part].split() if w not in FREE_WORDS)
                              for part in ("preferred", "passed_over"))
    return preferred - passed_over, passed_over - preferred


def said_in_past(clause: Clause) -> bool:
    """Whether a clause speaks of the past: its verb's tense, or a past time ("as a kid") with a past verb
    anywhere in it ("it reminds me of the camera I had as a kid")."""
    return clause.past or bool(PAST_TIME.search(clause.text) and any(is_past(w) for w in clause.words))


def negated_by_state(clause: Clause) -> set[str]:
    """The roots a state in the clause negates ("vegetarian": eat, meat)."""
    return {root(w) for word in set(clause.words) & IMPLICIT_NEGATIVES for w in IMPLIES.get(root(word), ())}


def core_roots(mine: Clause, names: frozenset[str]) -> frozenset[str]:
    """A clause's content roots but names and negations (its names when it has nothing else)."""
    named = {root(name) for name in names}
    roots = frozenset(root(w) for w in mine.words if w not in FREE_WORDS) - NEGATION_ROOTS
    return (roots - named) or roots


def modality_problem(claim: Claim, mine: Clause, clause: Clause, folding: bool = False) -> str | None:
    """Whether a fact states as done what the source's clause wishes, plans, asks or supposes; the
    fact's own clause decides whether it speaks of the past (not another clause of the same fact).
    Another person's wish or question ("if you need help", "could you tell me") is not the user's plan:
    whether the fact gives it to the user is person_problem's. A summary (`folding`) may name a plan
    ("Oslo trip."), never say it happened."""
    past = mine.past if len(claim.parts) > 1 else claim.past
    if claim.modal or clause.owner == "other" or (folding and not past):
        return None
    if clause.wish_from and not wished(mine, clause):
        clause = replace(clause, modal="")
    if (clause.modal or clause.future) and past:
        return f"a plan stated as past: the user said {clip(clause.text)}"
    if clause.modal:
        return f"a {clause.modal} stated as fact: the user said {clip(clause.text)}"
    if clause.future and past:
        return f"a plan stated as past: the user said {clip(clause.text)}"
    return None


def wished(mine: Clause, clause: Clause) -> bool:
    """Whether a fact's clause says what only a relative clause's wish says ("painted the fence" from "I
    bought paint that I want to use on the fence"), not just what comes before it ("bought paint")."""
    before = frozenset(root(w) for w in clause.words[: clause.wish_from])
    after = frozenset(root(w) for w in clause.words[clause.wish_from:] if w not in FREE_WORDS)
    return any(known(word_root, after) and not known(word_root, before) for word_root in mine.predicate_roots)


def capitalised(text: str) -> frozenset[str]:
    """The words `text` writes capitalised somewhere (names, and a sentence's first words), normalised."""
    return frozenset(normalised(word) for word in re.findall(r"(?<![\w'’])[A-Z][\w'’-]*", text))


def mixed_problem(claim: Claim, parts: list[Clause], names: frozenset[str] = frozenset()) -> str | None:
    """Whether the fact joins a word of one clause to what another clause says of it: "lives in Cork"
    where the user said "born in Cork" and "live in Galway" (or "works as a lawyer" where they said
    "studied law" and "work as a chef")."""
    words = claim.text.split()
    for i, word in enumerate(words):
        if word in FREE_WORDS:
            continue
        j = next((k for k in range(i + 1, min(len(words), i + MAX_LINK + 1)) if words[k] not in FREE_WORDS), None)
        if j is None:
            continue
        link = [w for w in words[i + 1: j] if w not in ARTICLES]
        said, told = root(word), root(words[j])
        if set(link) <= LIST_WORDS and link:
            continue  # "pottery and painting": a list, not a verb and its object
        if link != ["as"] and not any(known(told, part.roots) for part in parts):
            continue  # a word the user did not say (but a role: "works as a lawyer" for "as a chef")
        if (words[j] not in claim.names and link not in COPULAS) or numbers_in(words[j]):
            # "plays golf" for "play tennis": a new word, left to how close the meanings are; numbers
            # are detail_problem's ("half past seven" is 7:30)
            continue
        conflicts, supported = [], False
        for part in parts:
            for p, other in enumerate(part.words):
                if root(other) != said:
                    continue
                if any(known(told, frozenset({root(w)})) for w in part.words[p + 1:]):
                    supported = True
                q = next((k for k in range(p + 1, min(len(part.words), p + MAX_LINK + 1))
                          if part.words[k] not in FREE_WORDS), None)
                if q is not None and [w for w in part.words[p + 1: q] if w not in ARTICLES] == link \
                        and not known(told, frozenset({root(part.words[q])})) \
                        and (link in COPULAS or link == ["as"] or part.words[q] in names):
                    conflicts.append(part.words[q])  # a name for a name ("play online" has none to change)
        if conflicts and not supported:
            phrase = " ".join([word, *link])
            return f"mixes two clauses: the user said {phrase} {conflicts[0]!r}, not {phrase} {words[j]!r}"
    return None


def causer_problem(claim: Claim, parts: list[Clause]) -> str | None:
    """Whether the fact gives what helped or made the user do a thing to something else the user spoke of:
    "The fans helped the user clear their head" where the user said "the fans were crazy" and "working on
    cars helps me clear my head". The clauses that say the user's act must name its cause or point at one."""
    for mine in claim.parts:
        words = mine.words
        at = next((i for i in range(1, len(words) - 2)
                   if words[i] in IMPLICATIVE and words[i + 1] in ("i", "me")), None)
        if at is None:
            continue
        act = next((root(w) for w in words[at + 2:] if w not in FREE_WORDS), None)
        causes = frozenset(root(w) for w in words[:at] if w not in FREE_WORDS and w not in OPENERS)
        if act is None or not causes:
            continue
        saying = [part for part in parts if known(act, part.roots)]
        # a clause that points at its cause ("it really helps me relax") may mean the fact's
        if saying and not any(known_any(causes, part.roots) or set(part.words) & REFERENCES for part in saying):
            return f"mixes two clauses: the user said {clip(saying[0].text)}, not it of {' '.join(words[:at])!r}"
    return None


def clip(text: str, limit: int = 50) -> str:
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")
