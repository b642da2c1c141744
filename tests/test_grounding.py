"""The guards on what curation stores (curate.grounding, text.wording): a model that copies the prompt's
examples, answers garbage, loops, contradicts itself, invents facts, triples or ids stores nothing the
user did not say; every refusal is a DROP event with its reason. Real vault, git, index and MiniLM; the
fakes are scripted LLMs that behave badly."""

from __future__ import annotations

import json

import pytest

from memvault import settings
from memvault.core import Memvault
from memvault.curate import prompts
from memvault.curate.grounding import Source, evidence_problem, fact_problem
from memvault.curate.meaning import detail_problem
from memvault.text.wording import consistent_triple, triple_problem
from memvault.vault.format.entry import Entry
from tests.support.scripted_llm import ScriptedLLM
from tests.test_triples import ANA, EXTRACT, llm_for

PORTO = "I moved from Porto to Lisbon last month"
OLD_EXAMPLE = ANA  # the example the extraction prompt carried until the guards came


def judged(fact: str, source: Source, kept: bool, why: str = "") -> None:
    """Assert the guard keeps `fact` from `source` or not; a refusal's reason starts with `why`."""
    reason = fact_problem(fact, source)
    assert (reason is None) == kept, reason
    assert kept or reason.startswith(why), reason


def judged_by_meaning(fact: str, said: str, kept: bool, embedder, why: str = "") -> None:
    """Assert the meaning checks alone keep `fact` or not (the whole guard may refuse a fact for closeness
    first), and that the whole guard keeps what they keep."""
    from memvault.curate.meaning import meaning_problem

    reason = meaning_problem(fact, said)
    assert (reason is None) == kept, reason
    assert kept or reason.startswith(why), reason
    assert not kept or fact_problem(fact, Source(said, embedder=embedder)) is None


@pytest.fixture
def memvault(tmp_path):
    m = Memvault.open(settings.load(None, {"vault.path": str(tmp_path / "vault")}), create=True)
    yield m
    m.close()


def live_facts(m) -> list[Entry]:
    return [entry for _, entry in m.list(role="memory").entries]


def assert_all_grounded(m) -> None:
    """The invariant: every live fact is supported by the user turn it came from."""
    for fact in live_facts(m):
        _, turn = m.get(fact.source)
        assert fact_problem(fact.text, Source(turn.text)) is None, (fact.text, turn.text)
        assert triple_problem(fact.text, fact.triple or {}) is None, fact


def drops(result) -> dict[str, str]:
    return {e.new_memory: e.reason for e in result.events if e.event == "DROP"}


# -- the checks themselves ----------------------------------------------------------------------------
@pytest.mark.parametrize(("fact", "said", "why"), [
    ("The user's sister is called Ana.", PORTO, "copies the prompt's example"),
    ("The user <relation> is called <name>.", PORTO, "placeholder"),
    ("The user lives in Madrid.", PORTO, "madrid"),
    ("The user does not like olives.", "I love olives", "adds a negation"),
    ("The user likes olives.", "I hate olives", "drops a negation"),
    ("The user " + "loves bees " * 6, "I love bees", "repeated"),
    ("The user " + "x" * 600, "x", "longer than"),
    ("The user.", "I love bees", "says nothing"),
    ("What's up with you, Dave?", "Hard work pays off. What's up with you, Dave?", "question"),
])
def test_unsupported_facts_are_refused_with_a_reason(fact, said, why):
    reason = fact_problem(fact, Source(said), examples=prompts.EXAMPLE_FACTS)
    assert reason is not None and why in reason.lower()


@pytest.mark.parametrize(("fact", "said"), [
    ("The user moved from Porto to Lisbon last month.", PORTO),
    ("The user is vegetarian.", "I'm vegetarian and allergic to nuts"),
    ("The user has a nut allergy.", "I'm vegetarian and allergic to nuts"),  # allergic ~ allergy, nuts ~ nut
    ("The user likes pizza.", "I love pizza"),  # one polarity: like ~ love
    ("The user's sister is called Ana.", "My sister Ana is visiting"),  # the example, when the user says it
    ("The user no longer has a cat.", "Tom ran away, I don't have a cat any more"),
    ("O utilizador é vegetariano.", "Sou vegetariano"),
])
def test_supported_facts_pass(fact, said):
    assert fact_problem(fact, Source(said), examples=prompts.EXAMPLE_FACTS) is None


def test_evidence_is_found_normalised_or_fuzzily_but_never_invented():
    said = "Honestly, I’m VEGETARIAN — and allergic to nuts!"
    assert evidence_problem("I'm vegetarian", said) is None  # case, curly apostrophe, punctuation
    assert evidence_problem("I am vegetarian and allergic to nuts", said) is None  # contraction, a dash
    assert evidence_problem("I'm vegetarian, allergic to peanuts", said) is not None
    assert evidence_problem("my sister Ana", said) is not None


def test_a_triple_must_be_drawn_from_its_text():
    bike = "The user's bicycle is a red Brompton called Rocinante."
    assert triple_problem(bike, {"subject": "user", "predicate": "HAS_SISTER", "object": "Rocinante"})
    assert triple_problem(bike, {"subject": "user", "predicate": "OWNS", "object": "Ana"})
    assert triple_problem("Bruno keeps bees.", {"subject": "user", "predicate": "KEEPS", "object": "bees"})
    assert triple_problem(bike, {"subject": "user", "predicate": "OWNS", "object": "Rocinante"}) is None
    assert triple_problem(bike, {"subject": bike, "predicate": bike, "object": bike})  # the text thrice: no names
    assert triple_problem(bike, {"category": "possession", "evidence": "my bike"}) is None  # no triple at all
    speaks = "The user speaks Portuguese."
    fragment = {"subject": "user", "predicate": "I speak", "object": "Portuguese"}  # a small model's
    assert "not a relation" in triple_problem(speaks, fragment)
    assert triple_problem(speaks, {"subject": "user", "predicate": "SPEAKS", "object": "Portuguese"}) is None
    assert consistent_triple(bike, {"subject": "user", "predicate": "HAS_SISTER", "object": "Rocinante",
                                    "category": "possession", "evidence": "my bike"}) == {
        "category": "possession", "evidence": "my bike"}


# -- judged by meaning: each kind kept and refused (cases that are not in scripts/data/grounding_cases.jsonl)
@pytest.fixture(scope="module")
def embedder():
    from memvault.models.embedders import load_embedder

    return load_embedder("minilm")


@pytest.mark.parametrize(("said", "fact"), [
    ("I moved to Galway two years ago", "The user lives in Galway."),  # relocated -> lives in
    ("I'm a paramedic in Leeds", "The user works as a paramedic in Leeds."),  # I'm a X -> works as
    ("Oat milk beats cow's milk for me", "The user prefers oat milk."),  # beats ... for me -> prefers
    ("My dad's name day is the 9th of July", "The user's father's name day is July 9."),  # dad, dates
    ("I finally finished my apprenticeship", "The user completed an apprenticeship."),  # finished -> completed
    ("I gave up meat in 2020", "The user no longer eats meat."),  # a negation kept as a negation
    ("I'm hoping to visit Chile", "The user hopes to visit Chile."),  # a wish kept as a wish
    ("My niece Ines is a pilot", "The user's niece Ines is a pilot."),  # a person of the user's, as theirs
    ("I ran ten laps after my coach asked me to", "The user ran ten laps."),  # the user's own act, irregular
    ("My coach made me run ten laps", "The user ran ten laps."),  # made to: done
    ("I have written two cookbooks", "The user wrote two cookbooks."),  # written -> wrote
    ("I'm driving up to the lake on Saturday", "The user will drive up to the lake on Saturday."),  # a plan by its time
    ("We'll probably drive up to the lake next month", "The user plans to drive up to the lake next month."),
])
def test_faithful_paraphrases_are_kept(said, fact, embedder):
    assert fact_problem(fact, Source(said, embedder=embedder)) is None


@pytest.mark.parametrize(("said", "fact", "kind"), [
    ("I stopped eating sugar last spring", "The user eats sugar.", "drops a negation"),
    ("I adore my garden", "The user does not like their garden.", "adds a negation"),
    ("If I win the lottery I'd buy a farm", "The user has a farm.", "condition stated as fact"),
    ("I want to learn the banjo", "The user plays the banjo.", "wish or plan stated as fact"),
    ("Should I get a dog?", "The user has a dog.", "question stated as fact"),
    ("I'm going to climb Kilimanjaro next year", "The user climbed Kilimanjaro.", "plan stated as past"),
    ("Last weekend we drove up to the lake and the kids swam all day", "The user will drive up to the lake this "
     "weekend.", "a plan the user did not state"),  # a done act as a plan
    ("I love baking sourdough", "The user is going to bake sourdough tomorrow.", "a plan the user did not state"),
    ("My uncle's wife is called Ilse", "The user's wife is called Ilse.", "another person's"),
    ("My son Theo plays rugby", "The user plays rugby.", "another person's"),
    ("Ann told me her cat Mo is ill", "The user's cat Mo is ill.", "another person's"),
    ("My boss wants me to move to Ghent", "The user moved to Ghent.", "another person's"),
    ("I live in Ghent", "The user lives in Bruges.", "Bruges is not in what the user said"),
    ("I have four cousins", "The user has 14 cousins.", "14 is not in what the user said"),
    ("I was raised in Turin but I live in Milan", "The user lives in Turin.", "mixes two clauses"),
])
def test_meaning_changes_are_refused_with_their_kind(said, fact, kind, embedder):
    reason = fact_problem(fact, Source(said, embedder=embedder))
    assert reason is not None and kind in reason, reason


@pytest.mark.parametrize(("said", "fact"), [
    # what a capable model (Qwen 1.5B) stored from scripts/bench_curation_quality.py's traps: "The user"
    # put before a sentence about someone else
    ("Bob told me his dog Rex is sick.", "The user Bob told me his dog Rex is sick."),
    ("My aunt Rosa loved gardening; she passed away a few years ago.", "The user passed away a few years ago."),
    ("Grandpa Joe fought in the war; he died in 1990.", "The user Grandpa Joe fought in the war and died in 1990."),
    ("The news said pizza prices went up.", "The user The news said pizza prices went up."),
    ("Ines said that the landlord sold the flat in Braga.", "The user sold the flat in Braga."),
    ("The chef grew up in a fishing village.", "The user grew up in a fishing village."),
    ("Could you tell me how you organised the run?", "The user organised the run."),
    # what someone asked of the user, stated as done, with an irregular past ("ran" is "run") or a role
    ("My coach asked me to run ten laps", "The user ran ten laps."),
    ("My boss asked me to write the report", "The user wrote the report."),
    ("The manager asked me to run the meeting", "The user ran the meeting."),
])
def test_another_persons_act_or_state_is_not_given_to_the_user(said, fact, embedder):
    reason = fact_problem(fact, Source(said, embedder=embedder))
    assert reason is not None and "another person's" in reason, reason


@pytest.mark.parametrize(("said", "fact"), [
    ("My aunt passed away in May and I miss her.", "The user misses their aunt, who passed away in May."),
    ("The trip to Crete was amazing.", "The user had an amazing trip to Crete."),
    ("I had a film camera as a kid.", "The user used to have a film camera as a kid."),  # past = used to
    ("I used to have a dog in Ohio.", "The user had a dog in Ohio."),
    # someone else's condition is not the user's plan
    ("If you need any help, let me know! I just started volunteering at a shelter.",
     "The user started volunteering at a shelter and offered help."),
    # a thing's clause that holds the user ("a friend of mine who helped me"): the act is the user's too
    ("That's a close friend of mine who helped me get this painting published in the exhibition!",
     "The user had a painting published in an exhibition with the help of a close friend."),
])
def test_what_the_user_said_of_themselves_or_others_in_their_own_words_is_kept(said, fact, embedder):
    assert fact_problem(fact, Source(said, embedder=embedder)) is None


# What SmolLM2 stored over 200 messages of the curation benchmark before these checks (its own words
# here; the assistant's turn as the context the model was shown).
@pytest.mark.parametrize(("said", "context", "fact", "why"), [
    ("I went to a support group yesterday and it was so powerful.",
     "Hey Cara! Good to see you! I'm swamped with the kids and work.",
     "Hey Cara! Good to see you! I'm swamped with the kids and work.", "another speaker's words"),
    ("I took the kids to the aquarium on Sunday.", "Sounds lovely. I was stuck at the office all weekend.",
     "The user was stuck at the office all weekend.", "another speaker's words"),
    ("Bob told me his dog Rex is sick.", "",
     "Bob told me his dog Rex is sick. I'm sorry for your loss.", "in \"I'm sorry for your loss.\""),
    ("We hiked the trails last week and the views were amazing!", "",
     "The user hiked the trails last week.</description_3012896475-favicon.ico", "markup the model wrote"),
    ("My car broke down, so I got it repaired.", "", "The user's car broke down.<context-only_json", "markup"),
    ("Thanks a lot, Maria. Your help is really motivating.", "", "Maria", "a single word"),
    ("Apparently the CEO moved to Berlin.", "", "The user apparently moved to Berlin.", "another person's"),  # Qwen
])
def test_what_the_model_added_or_took_from_another_turn_is_refused(said, context, fact, why, embedder):
    assert why in (fact_problem(fact, Source(said, context, embedder=embedder)) or "")


@pytest.mark.parametrize(("said", "context", "fact"), [
    ("Yes, I went there last May.", "Did you enjoy your trip to Lisbon?", "The user went to Lisbon last May."),
    ("I'm a staff nurse at St Mary's. I love the night shifts.", "",
     "The user works as a nurse at St Mary's. The user loves night shifts."),
    ("Caroline, I adopted a puppy called Biscuit!", "Any news?", "The user adopted a puppy called Biscuit."),
    ("Apparently I'm moving to Berlin next month.", "", "The user is moving to Berlin next month."),
])
def test_a_fact_that_takes_a_reference_from_another_turn_or_has_two_sentences_is_kept(said, context, fact, embedder):
    assert fact_problem(fact, Source(said, context, embedder=embedder)) is None


# Two clauses about different people merged into one fact: SmolLM2 stored the first through a real add.
DENVER = "I relocated to Denver over the summer, and my son Max plays the violin."


@pytest.mark.parametrize(("said", "fact"), [
    (DENVER, "Max playing the violin in Denver."),
    (DENVER, "The user's son Max plays the violin in Denver."),
    (DENVER, "The user relocated to Denver with Max."),
    ("My sister moved to Paris. I stayed in Lyon.", "The user moved to Paris with their sister."),
])
def test_a_fact_that_gives_one_persons_clause_a_name_said_of_another_is_refused(said, fact, embedder):
    reason = fact_problem(fact, Source(said, embedder=embedder)) or ""
    assert reason.startswith("mixes two clauses"), reason


@pytest.mark.parametrize(("said", "fact"), [
    (DENVER, "The user relocated to Denver, and their son Max plays the violin."),
    ("I took my kids to Yellowstone and they loved it.", "The user's kids enjoyed the trip to Yellowstone."),
    ("I visited Paris. My sister Ana lives there.", "The user's sister Ana lives in Paris."),  # "there"
    ("My friend Ana visited. She lives in Lisbon.", "The user's friend Ana, who lives in Lisbon, visited."),
])
def test_names_a_clause_shares_or_refers_to_are_not_a_merge(said, fact, embedder):
    assert fact_problem(fact, Source(said, embedder=embedder)) is None


# Someone or something of the user's ("my tutor", "my car") is not the user; a superlative said with
# "nothing" is no negation; a future of remembering speaks of the past, not of a plan.
@pytest.mark.parametrize(("said", "fact"), [
    ("My car broke down last week.", "The user broke down last week."),
    ("My tutor moved to Madrid in May.", "The user moved to Madrid in May."),
    ("Nothing about golf interests me.", "The user is interested in golf."),
    ("I'll never go back to Japan.", "The user will go back to Japan."),
])
def test_what_the_users_things_or_people_did_or_a_real_nothing_is_refused(said, fact, embedder):
    assert fact_problem(fact, Source(said, embedder=embedder)) is not None


@pytest.mark.parametrize(("said", "fact"), [
    ("My favourite food is sushi.", "The user's favourite food is sushi."),
    ("My favourite food is sushi.", "The user loves sushi."),
    ("My new job starts on Monday.", "The user starts a new job on Monday."),
    ("My tutor helped me pass my driving test.", "The user passed their driving test."),
    ("My old laptop finally died, so I bought a new one.", "The user bought a new laptop."),
    ("Nothing makes me happier than a good cup of coffee in the morning.",
     "The user loves a good cup of coffee in the morning."),
    ("There's nothing like a swim in the sea at dawn.", "The user loves swimming in the sea at dawn."),
    ("Nothing compares to my grandma's apple pie.", "The user loves their grandma's apple pie."),
    ("I'll never forget my first trip to Japan.", "The user went on a trip to Japan."),
    ("I will always remember my grandfather's garden.", "The user's grandfather had a garden."),
])
def test_superlatives_memories_and_the_users_own_things_are_kept(said, fact, embedder):
    assert fact_problem(fact, Source(said, embedder=embedder)) is None


# The turns shown before the user's: the one answered lends a fact its words ("Yes, I went there"), the
# older ones only their names; with six turns shown, their words made facts of other turns look close.
GREYHOUND = [{"role": "assistant", "name": "Ana", "content": "I adopted a rescue greyhound and we walk by the canal"
                                                            " every evening."},
             {"role": "user", "content": "That sounds lovely, what a lucky dog."},
             {"role": "assistant", "name": "Ana", "content": "How was your week at the bakery?"}]


@pytest.mark.parametrize(("said", "fact", "kept"), [
    ("Busy. I walked a lot in the evenings.", "The user walks their rescue greyhound by the canal in the evening.",
     False),  # the greyhound and the canal are Ana's, three turns back
    ("Busy, but good. I finally fixed the oven.", "The user fixed the oven at the bakery.", True),  # the answered turn
    ("I met Pip yesterday, such a sweet dog!", "The user met Ana's greyhound Pip.", True),  # a name from before
])
def test_the_turn_answered_lends_its_words_the_older_turns_their_names(said, fact, kept, embedder):
    from memvault.curate.extract import grounding_source

    source = grounding_source([*GREYHOUND, {"role": "user", "content": said}], embedder=embedder)
    reason = fact_problem(fact, source)
    assert (reason is None) == kept, reason
    if not kept:
        assert "not close in meaning" in reason


# The answered turn's own statement given to the user: far closer to that turn than to the user's words.
# A fact that answers a question about the turn keeps that turn's words.
@pytest.mark.parametrize(("answered", "said", "fact", "kept"), [
    ("Guess what, I ran my first half marathon in Seville on Sunday and finished in under two hours!",
     "That sounds amazing, Leo! Running is such a great way to clear the head.",
     "The user ran their first half marathon in Seville on Sunday, finishing in under two hours.", False),
    ("We got a puppy on Friday, a little beagle called Biscuit, and she already chewed my slippers.",
     "Aww, beagles are the sweetest! Enjoy every minute.",
     "The user got a beagle puppy called Biscuit on Friday who chewed their slippers.", False),
    ("Have you ever been to Peru? I'm thinking of going next spring.",
     "Yes, twice! I loved hiking around Cusco.", "The user has been to Peru twice and loved hiking around Cusco.",
     True),
    ("What did you think of the new bakery on Elm Street?",
     "Honestly the croissants were too dry for me.", "The user found the croissants at the new bakery too dry.",
     True),
    # a near copy of the answered turn, though the user shares some of its words ("keep going", "train hard")
    ("Off-season is over. I'm going to keep training hard and see how the season goes.",
     "Thanks Leo! Let's both keep going and train hard.",
     "The user is going to keep training hard and see how the season goes.", False),
    # one sentence of several is the answered turn's
    ("Restoring that old boat made me feel proud, like I really built something with my own hands.",
     "Wow, Leo! I spent the whole weekend sanding my grandmother's kitchen table in the garage and it finally "
     "looks new again.", "The user spent the whole weekend sanding their grandmother's kitchen table in the garage "
     "and it finally looks new again. Restoring the old boat made the user feel proud.", False),
    # its copy, though the user's answer speaks of the same thing ("your script"): closer to the turn still
    ("Yeah, that'd be great. I'm trying to make this new parser work better, but I'm stuck. Do you have any ideas?",
     "Not sure about your parser, but breaking it down into smaller steps might help. Asking other programmers "
     "for advice could be good too.", "The user is trying to make this new parser work better, but the user is stuck.",
     False),
    # ... but a user who speaks of themselves may be said what the other said of themselves
    ("Maybe! I do like hiking, so that might be fun.", "Yeah, hiking's awesome! I'm a huge fan of it, that's why I go!",
     "The user does like hiking!", True),
])
def test_the_answered_turns_own_statement_is_not_the_users(answered, said, fact, kept, embedder):
    from memvault.curate.extract import grounding_source

    source = grounding_source([{"role": "assistant", "name": "Leo", "content": answered},
                               {"role": "user", "content": said}], embedder=embedder)
    reason = fact_problem(fact, source)
    assert (reason is None) == kept, reason
    if not kept:
        assert reason.startswith("another speaker's words") or "not close in meaning" in reason or (
            "said nothing of themselves" in reason), reason


# Idioms read by their plain meaning: a double negative is a positive ("never miss" is always going),
# "no way I'm ..." and "it's been ages since I ..." are negations; a "would" of a past time is a habit,
# not a wish; a reporting verb's past is when the user said it, not when the act was done.
@pytest.mark.parametrize(("said", "fact"), [
    ("I can't get enough of Korean dramas lately.", "The user loves Korean dramas."),  # the brief's three
    ("I never miss my Thursday salsa class.", "The user goes to a salsa class every Thursday."),
    ("Not a day goes by without me playing the piano.", "The user plays the piano every day."),
    ("I can't get enough of old jazz records.", "The user loves old jazz records."),
    ("I never miss a Celtics home game.", "The user goes to every Celtics home game."),
    ("Not a morning goes by without me walking the dog.", "The user walks the dog every morning."),
    ("My gym is not far from the office.", "The user's gym is near the office."),
    ("It's been a while since I played tennis.", "The user has not played tennis recently."),
    ("No way! I got the job at the museum.", "The user got the job at the museum."),
    ("I'll be honest, we chose the flat for its garden.", "The user chose the flat for its garden."),
    ("When I was little I'd spend hours drawing comics.", "The user spent hours drawing comics as a child."),
    ("I'm looking forward to the choir concert.", "The user expressed excitement about the choir concert."),
    ("I'm looking forward to the harvest festival.", "The user expressed anticipation for the harvest festival."),
    ("[Shares a photo of the lake at dawn]", "The user shared a photo of the lake at dawn."),
])
def test_idioms_habits_and_reports_are_read_by_their_meaning(said, fact, embedder):
    assert fact_problem(fact, Source(said, embedder=embedder)) is None


@pytest.mark.parametrize(("said", "fact", "kind"), [
    ("There's no way I'm running another marathon.", "The user is running another marathon.", "drops a negation"),
    ("No way am I moving back to Leeds.", "The user is moving back to Leeds.", "drops a negation"),
    ("It's been years since I smoked.", "The user smokes.", "drops a negation"),
    ("I never miss the last bus.", "The user misses the last bus.", "drops a negation"),
    ("My office isn't far from the river.", "The user's office is far from the river.", "drops a negation"),
    ("I can't get enough rest at night.", "The user gets enough rest at night.", "drops a negation"),
    ("My neighbour can't get enough of gardening.", "The user loves gardening.", "another person's"),
    ("When my sister was little she'd paint all day.", "The user painted all day as a child.", "another person's"),
    ("I would go skiing every winter if I could.", "The user goes skiing every winter.", "condition"),
    ("I'm looking forward to the choir concert.", "The user expressed that they sang at the choir concert.",
     "plan stated as past"),
    ("I'm going to tell my sister about the move.", "The user told their sister about the move.", "stated as"),
])
def test_idioms_habits_and_reports_do_not_let_a_meaning_change_through(said, fact, kind, embedder):
    reason = fact_problem(fact, Source(said, embedder=embedder))
    assert reason is not None and kind in reason, reason


def test_without_an_embedder_the_meaning_checks_still_run_and_words_decide_closeness():
    assert fact_problem("The user plays rugby.", Source("My son Theo plays rugby")) is not None
    assert fact_problem("The user eats sugar.", Source("I stopped eating sugar")) is not None
    assert fact_problem("The user lives in Galway.", Source("I moved to Galway two years ago")) is None
    assert "too few of its words" in fact_problem("The user enjoys opera.", Source("I moved to Galway"))


def test_a_failing_embedder_degrades_to_words_alone():
    class Broken:
        def embed(self, texts, kind="passage"):
            raise RuntimeError("model file gone")

    source = Source("I moved to Galway two years ago", embedder=Broken())
    assert fact_problem("The user lives in Galway.", source) is None
    assert source.similarity("The user lives in Galway.") is None


# -- models that behave badly, through the real add ---------------------------------------------------
def test_a_model_that_copies_the_prompts_example_stores_nothing(memvault):
    result = memvault.add(PORTO, llm=llm_for([OLD_EXAMPLE]))
    assert live_facts(memvault) == []
    assert "is not in the user's words" in drops(result)[OLD_EXAMPLE["text"]]
    placeholder = {"text": "The user <what the user said, in the third person>.", "subject": "user",
                   "predicate": "<RELATION>", "object": "<name from the fact>", "evidence": "<the user's exact words>"}
    result = memvault.add(PORTO, llm=llm_for([placeholder]))
    assert live_facts(memvault) == [] and "placeholder" in drops(result)[placeholder["text"]]


def test_a_summary_that_is_not_one_is_refused_and_the_facts_are_appended(memvault):
    llm = ScriptedLLM([(EXTRACT, json.dumps(["The user keeps bees in Coimbra."])),
                       ("Previous summary:", "The user's summary is incomplete.")], default="[]")
    result = memvault.add("I keep bees in Coimbra", llm=llm)
    assert any("summary the LLM wrote was refused" in note for note in result.notes)
    assert memvault.vault.summary("default").text == "- The user keeps bees in Coimbra."


def test_the_prompts_examples_are_placeholders_the_guard_refuses():
    example = prompts.EXTRACTION.split("in this shape (replace every <...>):\n", 1)[1].split("\nor []")[0]
    copied = json.loads(example)[0]
    assert fact_problem(copied["text"], Source(PORTO), copied["evidence"]) is not None
    for text in prompts.EXAMPLE_FACTS:  # the old examples, which small models copied
        assert text not in prompts.EXTRACTION and text not in prompts.RECONCILIATION
        assert fact_problem(text, Source(PORTO), examples=prompts.EXAMPLE_FACTS) is not None


def test_garbage_and_loops_store_nothing(memvault):
    garbage = ["zxq vbn plorf", "The user" + " likes" * 20, "The user lorem ipsum dolor."]  # at most 3 are read
    result = memvault.add("I keep bees in Coimbra", llm=llm_for(garbage))
    assert live_facts(memvault) == []
    assert set(drops(result)) == set(garbage)
    nonsense = ScriptedLLM([(EXTRACT, "asdf <html> {{{ not json")], default="[]")
    assert memvault.add("I keep bees in Coimbra", llm=nonsense).events == []


@pytest.mark.parametrize(("text", "why"), [
    ("The user adores", "cut off"),
    ("The user went to the lake with their", "cut off"),
    ("The user got a kitten. What a sweet moment. what a sweet moment!", "a sentence repeated"),
    ("The user got a kitten and went to the lake. }, {", "markup the model wrote ('}, {')"),  # a JSON list's rest
])
def test_an_answer_cut_short_or_repeating_a_sentence_is_no_fact(text, why):
    reason = fact_problem(text, Source("I got a kitten and went to the lake with my friends. I adore her!"))
    assert reason and why in reason, reason


@pytest.mark.parametrize("text", ["The user adores the kitten.", "The user went to the lake with friends.",
                                  "The user got a kitten that the user adores."])
def test_a_whole_fact_is_not_taken_for_one_cut_short(text):
    assert fact_problem(text, Source("I got a kitten and went to the lake with my friends. I adore her!")) is None


@pytest.mark.parametrize(("fact", "kept"), [
    # a clause made up beside a supported one: none of its words is the user's, nor its meaning
    ("The user is a retired pilot, and the user loves their two parrots!", False),
    ("The user loves their two parrots, and they wake the user up every morning.", True),
    ("The user loves their two parrots, and they are a joy every morning.", True),
])
def test_a_clause_made_up_beside_a_supported_one_is_refused(fact, kept, embedder):
    reason = fact_problem(fact, Source("My two parrots are so loud! I love them to bits. They wake me at six.",
                                       embedder=embedder))
    assert (reason is None) == kept, reason


def test_a_model_that_contradicts_itself_or_the_user_keeps_only_what_was_said(memvault):
    answer = ["The user is vegetarian.", "The user eats meat every day.", "The user is not allergic to nuts."]
    result = memvault.add("I'm vegetarian and allergic to nuts", llm=llm_for(answer))
    assert [f.text for f in live_facts(memvault)] == ["The user is vegetarian."]
    assert set(drops(result)) == {"The user eats meat every day.", "The user is not allergic to nuts."}
    assert_all_grounded(memvault)


def test_a_wrong_triple_is_dropped_the_text_kept_and_the_prompt_shows_the_text(memvault):
    from memvault.converse.prompt import gather, memory_line

    bike = {"text": "The user's bicycle is a red Brompton called Rocinante.", "category": "possession",
            "subject": "user", "predicate": "HAS_SISTER", "object": "Rocinante", "evidence": "my bicycle"}
    memvault.add("My bicycle is a red Brompton called Rocinante", llm=llm_for([bike]))
    [fact] = live_facts(memvault)
    assert (fact.text, fact.subject, fact.predicate, fact.object) == (bike["text"], None, None, None)
    assert memvault.relations("who is Rocinante") == []
    lines = [memory_line(hit) for hit in gather(memvault, "what is Rocinante?", "default", {}).memories]
    assert f"[memory] {bike['text']}" in lines and not [line for line in lines if "HAS_SISTER" in line]


def test_a_hand_written_wrong_triple_never_reaches_the_graph_and_doctor_fix_drops_it(memvault):
    from memvault.doctor import diagnose, repair

    text = "The user's favourite colour is teal."
    memvault.add_entries([Entry(text, subject="Ana", predicate="HAS_SISTER", object="user"),
                          Entry("The user's sister is called Ana.", subject="user", predicate="HAS_SISTER",
                                object="Ana")], "hand-written")
    assert [(r.source, r.relationship, r.destination) for r in memvault.relations("Ana")] == [
        ("user", "has_sister", "ana")]
    diagnosis = diagnose(memvault.settings, llm_check=False)
    [check] = [c for c in diagnosis.checks if c.name == "triples"]
    assert check.status == "warn" and "1 fact(s)" in check.detail
    done = repair(memvault.settings, diagnosis)
    assert any("dropped the triple of 1 fact" in line for line in done)
    fixed = {f.text: f for f in live_facts(memvault)}
    assert fixed[text].subject is None and fixed[text].text == text
    assert fixed["The user's sister is called Ana."].object == "Ana"
    assert [c.status for c in diagnose(memvault.settings, llm_check=False).checks if c.name == "triples"] == ["ok"]


def test_reconcile_cannot_invent_ids_or_facts(memvault):
    memvault.add("I live in Paris", llm=llm_for(["The user lives in Paris."]))
    [paris] = live_facts(memvault)
    decisions = [{"fact": 0, "event": "UPDATE", "id": "7", "text": "The user lives in Berlin."},
                 {"fact": 0, "event": "DELETE", "id": paris.id},  # a real id, never offered by number
                 {"fact": 0, "event": "UPDATE", "id": "0",
                  "text": "The user lives in Berlin with a sister called Ana."},
                 {"fact": 0, "event": "ADD", "text": "The user has a dog called Rex."}]
    result = memvault.add("I live in Berlin now", llm=llm_for(["The user lives in Berlin now."], decisions))
    dropped = drops(result)
    assert "not offered" in dropped["The user lives in Berlin."]
    assert "Ana is not in what the user said" in dropped["The user lives in Berlin with a sister called Ana."]
    assert "Rex is not in what the user said" in dropped["The user has a dog called Rex."]
    assert sorted(f.text for f in live_facts(memvault)) == ["The user lives in Berlin now.", "The user lives in Paris."]
    assert_all_grounded(memvault)


def test_a_grounded_update_merges_the_new_fact_and_the_old(memvault):
    memvault.add("I live in Paris", llm=llm_for(["The user lives in Paris."]))
    [paris] = live_facts(memvault)
    merged = "The user lives in Berlin, not Paris."
    result = memvault.add("I moved to Berlin, I live there now", llm=llm_for(
        ["The user lives in Berlin."], [{"fact": 0, "event": "UPDATE", "id": "0", "text": merged}]))
    assert [(e.event, e.id, e.new_memory) for e in result.events] == [("UPDATE", paris.id, merged)]


def test_a_held_candidate_the_session_does_not_support_is_dropped_at_session_end(memvault):
    from tests.test_policy import policy_llm

    held = "The user is planning a trip to Oslo."
    llm = policy_llm({"I'm planning a trip to Oslo": [held]}, {held: ("hold", "fact")}, promote={held: True})
    memvault.policy_add("I'm planning a trip to Oslo", "default", llm=llm)
    buffer = memvault.session_buffer
    with buffer.locked():  # a buffer a bug or a hand wrote: what is promoted is checked again
        record = buffer.read("default")
        buffer.append_held(record, [{"text": "The user's sister is called Ana.", "label": "hold", "kind": "fact"}])
    llm = policy_llm({}, promote={held: True, "The user's sister is called Ana.": True})
    ended = memvault.end_session("default", llm)
    assert [f.text for f in live_facts(memvault)] == [held]
    [dropped] = [e for e in ended.events if e.event == "DROP"]
    assert dropped.new_memory == "The user's sister is called Ana." and "example" in dropped.reason


# -- Memory.add(messages): the whole conversation; one extraction prompt everywhere ---------------------
def test_memory_add_extracts_from_every_user_message(tmp_path):
    import memvault as package

    def answer(prompt: str) -> str:
        said = prompt.split("The user's messages (extract from these only):\n", 1)[1]
        return json.dumps(["The user's name is Alice."] if "I'm Alice" in said else [])

    llm = ScriptedLLM([("extract from these only", answer), ("Previous summary:", "Summary.")], default="[]")
    m = package.Memory(vault=tmp_path / "vault", llm=llm)
    try:
        result = m.add([{"role": "user", "content": "Hi, I'm Alice"},
                        {"role": "assistant", "content": "Hello Alice! How can I help?"},
                        {"role": "user", "content": "Recommend a book"}], user_id="alice")
        assert [(r["event"], r["memory"]) for r in result["results"]] == [("ADD", "The user's name is Alice.")]
        [call] = [c for c in llm.calls if "extract from these only" in c.prompt]
        assert "Hello Alice! How can I help?" in call.prompt.split("(context only)", 1)[1]
    finally:
        m.close()


def test_the_extraction_prompt_file_applies_on_the_chat_path(tmp_path):
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Extract only food facts. Answer a JSON list.", encoding="utf-8")
    m = Memvault.open(settings.load(None, {"vault.path": str(tmp_path / "vault"),
                                           "llm.extraction_prompt_file": str(prompt)}), create=True)
    try:
        llm = ScriptedLLM([(EXTRACT, json.dumps(["The user loves pizza."]))], default="[]")
        m.policy_add("I love pizza", "default", llm=llm)  # chat's and the proxy's path
        assert llm.calls[0].messages[0]["content"] == "Extract only food facts. Answer a JSON list."
    finally:
        m.close()


# -- the real local model ----------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_readme_examples_through_the_real_local_model_store_nothing_ungrounded(local_llm, tmp_path):
    import memvault as package

    config = {"vault.path": str(tmp_path / "vault"), "llm.model": "openai/smollm2", "llm.api_base": local_llm,
              "llm.api_key": "none", "llm.timeout": 300, "llm.max_tokens": 200}
    core = Memvault.open(settings.load(None, config), create=True)
    try:
        result = core.add(PORTO)
        assert not [n for n in result.notes if "LLM failed" in n], result.notes
        assert_all_grounded(core)
        assert "The user's sister is called Ana." not in [f.text for f in live_facts(core)]
    finally:
        core.close()
    m = package.Memory(vault=tmp_path / "vault", settings=settings.load(None, config))
    try:
        m.add("I'm vegetarian and allergic to nuts", user_id="alice")
        for item in m.get_all(user_id="alice")["results"]:
            problem = fact_problem(item["memory"], Source("I'm vegetarian and allergic to nuts"))
            assert problem is None, (item["memory"], problem)
    finally:
        m.close()


# Scope and normal forms (issue 32, the misses of LoCoMo facts 200-299 read by cause; each case written here):
# - a comma that joins two independent clauses ends the first one's negation and modality ("It's not easy,
#   my sister broke her arm"); a fronted subordinate clause ("If I get the job, I move") stays one clause;
# - "lack" says "not have"; a tag question ("..., don't you think?") asserts, and its "not" negates nothing;
# - "no city better than" is a superlative; "don't miss a single" a double negative; "long time no see" a greeting;
# - "used to have X as a kid" is what "the X I had as a kid" says;
# - of two clauses that say a fact's words equally, the one about the fact's subject is the one it reports;
# - a name said in a fact's place of a word that is not a name ("play online") is no changed value;
# - "stopping", "planned" are "stop", "plan" (a doubled consonant before -ing/-ed).
@pytest.mark.parametrize(("said", "fact"), [
    ("It's not easy at the moment, my daughter broke her wrist on Sunday.",
     "The user's daughter broke her wrist on Sunday."),
    ("I can't sleep much these days, I keep drinking too much coffee.", "The user drinks too much coffee."),
    ("I baked a lemon tart last night, maybe you would like the recipe!", "The user baked a lemon tart last night."),
    ("I don't have a car.", "The user lacks a car."),
    ("The new bakery on Elm Street is great, don't you think?", "The user likes the new bakery on Elm Street."),
    ("There is no city better than Lisbon in spring!", "The user loves Lisbon in spring."),
    ("I don't miss a single home game of the Rovers.", "The user goes to every home game of the Rovers."),
    ("Hey, long time no chat, I had a great time at the lake with the gang.",
     "The user had a great time at the lake with friends."),
    ("It reminds me of the guitar I had as a teenager.", "The user used to have a guitar as a teenager."),
    ("Your one-to-one coaching will really help the new players. I had a coach too when I started playing.",
     "The user values coaching, having had a coach when they started playing."),
    ("I'm obsessed with a board game called Catan. We play online with friends every week.",
     "The user plays Catan online with friends every week."),
    ("My mum made me repaint the kitchen last summer.", "The user repainted the kitchen last summer."),
    ("Our village has no bus on Sundays and it drives me mad.",
     "The user is frustrated by the lack of a Sunday bus in their village."),
    ("We need more nurses on the night shift.", "The user is concerned about the lack of nurses on the night shift."),
    ("I'm starting at the new school on Monday and I'm terrified.",
     "The user is scared of starting at the new school."),
])
def test_scope_and_normal_forms_are_read_by_their_meaning(said, fact, embedder):
    assert fact_problem(fact, Source(said, embedder=embedder)) is None


@pytest.mark.parametrize(("said", "fact", "kind"), [
    ("If I get the job, I move to Berlin.", "The user moves to Berlin.", "condition"),
    ("Although I loved Rome, I never went back.", "The user went back to Rome.", "drops a negation"),
    ("Next week, I fly to Oslo.", "The user flew to Oslo.", "plan stated as past"),
    ("I don't eat meat, I eat fish.", "The user eats meat.", "drops a negation"),
    ("I have plenty of patience with the kids.", "The user lacks patience with the kids.", "adds a negation"),
    ("I lack the confidence to sing in public.", "The user has the confidence to sing in public.", "drops a negation"),
    ("I don't like the new bakery on Elm Street, do you?", "The user likes the new bakery on Elm Street.",
     "drops a negation"),
    ("Is the new bakery on Elm Street any good?", "The user likes the new bakery on Elm Street.", "question"),
    ("I don't miss the city at all.", "The user misses the city.", "drops a negation"),
    ("I play the guitar every day.", "The user used to play the guitar.", "adds a negation"),
    ("I was born in Cork but I live in Galway.", "The user lives in Cork.", "mixes two clauses"),
    ("My mum asked me to repaint the kitchen last summer.", "The user repainted the kitchen last summer.",
     "another person's"),
])
def test_scope_and_normal_forms_do_not_let_a_meaning_change_through(said, fact, kind, embedder):
    reason = fact_problem(fact, Source(said, embedder=embedder))
    assert reason is not None and kind in reason, reason


def test_a_doubled_consonant_before_an_ending_is_one_word():
    from memvault.text.wording import root

    assert root("stopping") == root("stop") and root("planned") == root("plan") and root("shopping") == root("shop")
    assert root("added") != root("ad") and root("falling") == root("fall") and root("missed") == root("miss")


def test_a_fact_in_other_forms_of_the_users_words_names_the_place_the_answered_turn_gave():
    from memvault.curate.extract import grounding_source

    turns = [{"role": "assistant", "name": "Ana", "content": "I want to see the Giant's Causeway. It has amazing"
                                                             " basalt columns."},
             {"role": "user", "content": "Oh nice, I could stop by there sometime."}]
    fact = "The user is keen on stopping by the Giant's Causeway."
    assert fact_problem(fact, grounding_source(turns)) is None


# A question, an interest or a view is about something the user may name only by "it", "that" or "you":
# the turn they answer names it. Not for an act or a plan: "Sounds fun!" does not make Ana's trip the user's.
ANSWERED = [{"role": "assistant", "name": "Ana", "content": "I finally finished the pottery course last week,"
                                                            " and I'm so proud of it."}]


@pytest.mark.parametrize(("said", "fact", "kept"), [
    ("That's great! What will you make next?", "The user asks about Ana's plans after the pottery course.", True),
    ("Wow, I'd love to try a course like that too.", "The user is interested in trying a pottery course.", True),
    ("That's great, enjoy it!", "The user finished the pottery course last week.", False),
    ("That's great, enjoy it!", "The user is proud of finishing the pottery course.", False),
    ("I went to the cinema yesterday.", "The user asks about Ana's pottery course.", False),  # no "it", "that", "you"
])
def test_a_question_or_view_names_what_the_answered_turn_said(said, fact, kept, embedder):
    from memvault.curate.extract import grounding_source

    reason = fact_problem(fact, grounding_source([*ANSWERED, {"role": "user", "content": said}], embedder=embedder))
    assert (reason is None) == kept, reason


@pytest.mark.parametrize(("text", "why"), [
    # what SmolLM2 stored in the curation benchmark (2026-11-29): no fact about anyone
    ("Hey Gina! Thanks for asking.", "a greeting"),
    ("Hi John, nice to meet you!", "a greeting"),
    ("Hey Andrew! Good to see ya!", "a greeting"),
    ("Cool, Nate!", "a greeting"),
    ("Talk soon!", "a greeting"),
    ("The user reminded the user that every problem has a solution.", "the user does it to the user"),
    ("Take care, Sam.", "a greeting"),
    ("You got it!", "said to the other speaker"),
    ("Your future family is gonna be so lucky to have you!", "said to the other speaker"),
    ("I'm a big fan of [insert name of the user who wants to improve education].", "placeholder"),
])
def test_greetings_remarks_to_the_other_speaker_and_bracketed_placeholders_are_no_facts(text, why):
    from memvault.curate.grounding import degenerate

    reason = degenerate(text)
    assert reason is not None and why in reason, reason


@pytest.mark.parametrize("text", [
    "Hey Jolene, sorry to tell you this but my dad passed away two days ago.",  # a fact after the greeting
    "Thanks to her tutor, the user passed the exam.",
    "The user said hi to Gina.",
    "The user's password is [redacted: password].",  # memvault's own marker
    "Hey Jude is the user's favourite song.",
    "Young people inspire the user.",
    "The user reminded the user's brother that every problem has a solution.",
    "The user reminded themselves that every problem has a solution.",
])
def test_a_fact_that_opens_like_a_greeting_or_holds_brackets_is_still_a_fact(text):
    from memvault.curate.grounding import degenerate

    assert degenerate(text) is None


# A name typed with two letters swapped or one letter more or less is the name; a letter for another is another
# name; a day or month shortened as people write it is that day or month.
@pytest.mark.parametrize(("said", "fact", "kept"), [
    ("We finally visited Barcleona in the spring.", "The user visited Barcelona in the spring.", True),
    ("I've been learning the Ukulele from Mr Henderrson.", "The user is learning the ukulele from Mr Henderson.", True),
    ("My flight to Stockholm leaves next Thurs.", "The user's flight to Stockholm leaves next Thursday.", True),
    ("The lease ends in Sept.", "The user's lease ends in September.", True),
    ("My cousin Marcus is visiting.", "The user's cousin Markus is visiting.", False),  # another name
    ("My colleague Stefan is retiring.", "The user's colleague Stephan is retiring.", False),
    ("I sat on the bench for an hour.", "The user sat on the bench on Saturday.", False),  # "sat" is no day
    ("I moved to Oslo.", "The user moved to Olso.", False),  # too short to tell a typo from another name
])
def test_a_misspelt_name_or_a_shortened_day_is_the_same_detail(said, fact, kept):
    reason = detail_problem(fact, said)
    assert (reason is None) == kept, reason


# A count of the names a fact lists, each said, is said (LoCoMo's "introduced three pets - Max, Daisy, and a new
# pup named Ned"); a count the names do not make is not.
@pytest.mark.parametrize(("said", "fact", "kept"), [
    ("Last Friday, I started introducing Max, Daisy and the new pup Ned.",
     "The user introduced three pets - Max, Daisy, and a new pup named Ned.", True),
    ("I visited Italy, Turkey and Mexico last year.", "The user visited Italy, Turkey and Mexico, 3 countries.", True),
    ("My kids Max and Ana love the park.", "The user has three kids, Max and Ana.", False),
    ("My dogs Max and Ana love the park.", "The user has 4 dogs.", False),
])
def test_a_count_of_the_names_listed_is_said(said, fact, kept):
    reason = detail_problem(fact, said)
    assert (reason is None) == kept, reason


# Casual speech read by its meaning: a tag question typed without its comma or question mark, a "no" that
# opens a noun ("no luck"), a 'd before a participle ("I'd fixed": had), a wish in a relative clause, a
# negating verb a fact keeps ("won't quit"), a role opening the sentence ("As a fan, I can't ..."), an answer
# "Not at all,", "'cause", and "determined to" as an intent. Each rule with a case on either side.
@pytest.mark.parametrize(("said", "fact", "kept"), [
    ("I really should call my grandmother more often shouldn't I.",
     "The user thinks they should call their grandmother more often.", True),
    ("I haven't been to Rome yet, have I?", "The user has been to Rome.", False),
    ("Been looking at flats all month, but no luck so far.", "The user has had no luck finding a flat so far.", True),
    ("No luck with the job hunt so far.", "The user has had luck with the job hunt so far.", False),
    ("I'd already booked the hotel when the flight got cancelled.", "The user had booked the hotel.", True),
    ("I'd love to visit Lisbon with my sister.", "The user visited Lisbon with their sister.", False),
    ("Yesterday I got back from Lisbon with some recipes that I want to share with you!",
     "The user got back from Lisbon yesterday.", True),
    ("I bought some blue paint that I want to use on the fence.", "The user painted the fence blue.", False),
    ("The hikes were long but that's what keeps us fit. We look out for each other and won't quit.",
     "The user's hiking group does not quit and looks out for each other to stay fit.", True),
    ("We lost twice this season, but we back each other up and won't quit.",
     "The user's team does not back each other up.", False),
    ("As a lifelong Arsenal supporter, I can't agree with that.", "The user is a lifelong Arsenal supporter.", True),
    ("As a night nurse, I can't say I enjoy the long shifts.", "The user enjoys the long shifts.", False),
    ("Not at all, all you need is a pair of boots and a map.", "All one needs is a pair of boots and a map.", True),
    ("Not at all, I never liked horror films.", "The user liked horror films.", False),
    ("I'm learning Italian 'cause my partner is from Rome and it'd be nice to talk to her family.",
     "The user is learning Italian.", True),
    ("I'm saving up 'cause I'd like to buy a camper van.", "The user bought a camper van.", False),
    ("I'm selling my bike 'cause I'd rather take the bus.", "The user is selling their bike.", True),
    ("I bought new running shoes and I want to run a marathon.", "The user bought new running shoes.", True),
    ("I bought new running shoes and I want to run a marathon.", "The user ran a marathon in running shoes.", False),
    ("Gonna keep training hard for the race. Nothing will stop me!",
     "The user is determined to keep training hard for the race.", True),
    ("Gonna keep training hard for the race.", "The user kept training hard for the race.", False),
    # "can't" normalised is "ca not": the eagerness is a wish all the same
    ("I can't wait to run my first marathon!", "The user ran their first marathon.", False),
    ("Cannot wait to try the new climbing gym.", "The user tried the new climbing gym.", False),
    # working on a thing is no claim it is done; being supportive is a stance, not the wish's act
    ("Can't wait 'til my bakery opens its doors to the whole town!", "The user is working on opening a bakery.", True),
    ("Can't wait to read it, Marta! I'm here to support you.", "The user is supportive of Marta.", True),
    # the user's own verb, and what "they" do only describes its object; not when the verb is another's
    ("I picked them because they run free classes for beginners.",
     "The user picked a climbing gym that runs free classes for beginners.", True),
    ("I joined them since they organise beach cleanups every month.",
     "The user joined a group that organises beach cleanups every month.", True),
    ("I teach piano and my daughter plays the cello.", "The user plays the cello.", False),
    ("I play the guitar and my son plays the violin.", "The user plays the violin.", False),
    ("I love my neighbours. They grow tomatoes.", "The user grows tomatoes.", False),
    # an answer before a comma negates the question, not the clause after it; without the comma it negates
    ("Not yet, been swamped with the move all week.", "The user has been swamped with the move all week.", True),
    ("Nope, I take the train to work.", "The user takes the train to work.", True),
    ("Not yet been to Iceland, sadly.", "The user has been to Iceland.", False),
    # a preference says a "not" of what it passes over; the other way round it is turned around
    ("I can't stand instant coffee.", "The user prefers fresh coffee over instant coffee.", True),
    ("I really love instant coffee.", "The user prefers fresh coffee over instant coffee.", False),
    ("I prefer the mountains to the beach.", "The user prefers the beach over the mountains.", False),
    # a wish the user never stated is no fact; one stated in words of eagerness is
    ("My street has a lovely little park - great for the dog's walks.",
     "The user would love to visit a park but is not sure where it is.", False),
    ("Haven't been climbing yet, but I'm keen to give it a go.", "The user is keen to give climbing a go.", True),
    # what helped the user do a thing is what the user said helped, not something else they spoke of
    ("The crowd was wild! Baking bread helps me unwind and clear my head.",
     "The crowd helped the user unwind and clear their head.", False),
    ("Baking bread helps me unwind and clear my head.", "Baking bread helps the user unwind.", True),
    ("Yoga is great. It really helps me sleep better.", "Yoga helps the user sleep better.", True),
    # "is starting" in the autumn is a plan the user stated
    ("My daughter is starting university in September.", "The user's daughter will start university in September.",
     True),
])
def test_casual_speech_is_read_by_its_meaning(said, fact, kept, embedder):
    reason = fact_problem(fact, Source(said, embedder=embedder))
    assert (reason is None) == kept, reason


# What the user congratulated the other speaker on is the other's; the congratulation itself is the user's.
@pytest.mark.parametrize(("said", "fact", "kept"), [
    ("Woohoo! Congrats on the new team. Which team did you sign with?", "The user just signed with a new team.", False),
    ("Congratulations on the promotion, you earned it!", "The user got a promotion.", False),
    ("Congrats on the new team! Which one did you sign with?", "The user congratulated them on the new team.", True),
    ("Thanks! Congrats on your promotion too. I got a new job last week.", "The user got a new job last week.", True),
])
def test_what_the_user_congratulated_the_other_on_is_not_the_users(said, fact, kept, embedder):
    reason = fact_problem(fact, Source(said, embedder=embedder))
    assert (reason is None) == kept, reason


def test_a_verb_ending_in_ee_is_one_word_in_every_form():
    """"agrees" and "agree" are one verb: the user's "not" of it is seen ("agrees" stemmed to "agr" hid it)."""
    said = "As a City fan, I can't agree with you, John."
    assert "drops a negation" in (fact_problem("The user agrees with John.", Source(said)) or "")
    assert fact_problem("The user agreed with John.", Source("I totally agree with you, John.")) is None


# A "not" in a clause of a fact that shares no word with the user's is the model's, unless the user's words
# negate something ("No, I didn't."): the clause may then say what was denied.
@pytest.mark.parametrize(("said", "fact", "kept"), [
    ("I signed up for a pottery class in March and I finally went to my first lesson yesterday.",
     "The user signed up for a pottery class, but never found the time.", False),
    ("I signed up for a pottery class in March and I finally went to my first lesson yesterday.",
     "The user signed up for a pottery class in March and went to the first lesson yesterday.", True),
    ("No, I didn't. But I signed up for a pottery class in March.",
     "The user did not go, but signed up for a pottery class in March.", True),
    ("Haven't had the chance yet! I signed up for a pottery class in March though.",
     "The user has not had the chance yet, but signed up for a pottery class in March.", True),
])
def test_a_negation_in_a_clause_the_user_said_nothing_like_is_refused(said, fact, kept, embedder):
    judged(fact, Source(said, embedder=embedder), kept, "adds a negation: the user said nothing like")


TELLER = [{"role": "assistant", "name": "Rui",
           "content": "I ran the Lisbon half marathon on Sunday and I'm still sore! Do you ever run races?"}]


# What the answered turn's speaker tells of their own doing is not the user's when the user's words say
# nothing of the user, though the turn asks the user something.
@pytest.mark.parametrize(("said", "fact", "kept"), [
    ("Wow, that sounds brutal! Races are always a blast when friends cheer you on.",
     "The user has been running a lot of races lately.", False),
    ("Wow, that sounds brutal! Races are always a blast when friends cheer you on.",
     "The user thinks races are a blast when friends cheer them on.", True),
    ("Yeah, I ran my first one in May! I love the crowds.", "The user ran their first race in May.", True),
    ("Yeah, I ran my first one in May! I love the crowds.", "The user loves the crowds at races.", True),
])
def test_the_answered_turns_own_act_is_not_given_to_a_user_who_said_nothing_of_themselves(said, fact, kept,
                                                                                          embedder):
    from memvault.curate.extract import grounding_source

    source = grounding_source([*TELLER, {"role": "user", "content": said}], embedder=embedder)
    judged(fact, source, kept, "another speaker's: the turn it answers says it of its speaker")


# What the user bids someone else do ("I'd like you to ...", "I told my brother to ...") is that person's act.
@pytest.mark.parametrize(("said", "fact", "kept"), [
    ("I'd love for you to come to my recital on Friday.", "The user would love to come to the recital on Friday.",
     False),
    ("I'd love for you to come to my recital on Friday.",
     "The user would love the other speaker to come to their recital on Friday.", True),
    ("I want you to try the new ramen place by the station.", "The user wants to try the new ramen place.", False),
    ("I told my brother to sell his old car.", "The user sold their old car.", False),
    ("I sold my old car last month and told my brother to sell his too.", "The user sold their old car last month.",
     True),
    ("I helped my sister to move house last week.", "The user helped their sister move house last week.", True),
    ("I want to learn to swim this summer.", "The user wants to learn to swim this summer.", True),
])
def test_what_the_user_bade_someone_else_do_is_not_the_users_act(said, fact, kept, embedder):
    judged(fact, Source(said, embedder=embedder), kept, "another person's: the user bade someone else do it")


# "thinking about" plans when what follows is to be done, not what the user recalls; a stance ("fascinated by",
# "enthusiastic about") agrees with a wish.
@pytest.mark.parametrize(("said", "fact", "kept"), [
    ("I can't stop thinking about the short story I wrote last winter, so I started a second one.",
     "The user wrote a short story last winter.", True),
    ("That got me thinking of my old camping trips with my dad, I loved them.",
     "The user loved their old camping trips with their father.", True),
    ("I'm thinking of getting a second dog.", "The user has a second dog.", False),
    ("I'm thinking about moving to Porto next year.", "The user moved to Porto.", False),
    ("Fascinated by old castles and can't wait to visit one in Wales.", "The user is fascinated by old castles.", True),
    ("Fascinated by old castles and can't wait to visit one in Wales.", "The user visited a castle in Wales.", False),
    ("Can't wait for our beach day with the kids!", "The user is enthusiastic about a beach day with their kids.",
     True),
    ("Can't wait for our beach day with the kids!", "The user had a beach day with their kids.", False),
])
def test_a_thought_recalled_or_a_stance_is_no_plan_stated_as_done(said, fact, kept, embedder):
    reason = fact_problem(fact, Source(said, embedder=embedder))
    assert (reason is None) == kept, reason


# What the user needs or has to do is not done; news the user is excited to tell is; "Remember X?" asks nothing
# of X; "last Fri" is a time, not who did it.
@pytest.mark.parametrize(("said", "fact", "kept"), [
    ("I need to call my gran this week.", "The user called their grandmother this week.", False),
    ("I really have to start stretching after runs.", "The user stretches after runs.", False),
    ("I need to call my gran this week.", "The user needs to call their grandmother this week.", True),
    ("I'm so excited to tell you I adopted a kitten!", "The user adopted a kitten.", True),
    ("I'm so excited to adopt a kitten next week!", "The user adopted a kitten.", False),
    ("Remember the tough chess puzzle? I finally cracked it last week.",
     "The user recently solved the tough chess puzzle.", True),
    ("Last Fri I finally took my niece to the aquarium.", "The user took their niece to the aquarium last Friday.",
     True),
])
def test_a_need_is_not_done_and_told_news_is(said, fact, kept, embedder):
    reason = fact_problem(fact, Source(said, embedder=embedder))
    assert (reason is None) == kept, reason


OFFICE = ("A lot has happened since we last spoke. Last week I decided to run for office again, even though I haven't "
          "been successful before. I can't let go of my dream to make a difference in my town.")


# A "not" the user said elsewhere does not say the fact's: the user's negated clause must speak of what the fact
# negates, or say most of the fact's clause.
@pytest.mark.parametrize(("said", "fact", "kept"), [
    (OFFICE, "The user has no idea how to make it happen yet.", False),
    (OFFICE, "The user has not been successful in running for office before.", True),
    (OFFICE, "The user can't let go of the dream to make a difference.", True),
    ("I had a lot to do, and in order not to forget anything I started writing it all in a notebook.",
     "The user writes everything in a notebook to avoid forgetting tasks.", True),
])
def test_a_negation_is_said_by_a_negated_clause_about_the_same_thing(said, fact, kept, embedder):
    judged_by_meaning(fact, said, kept, embedder, "adds a negation")


CHURCH = [{"role": "assistant", "name": "Maria",
           "content": "Just yesterday I joined a nearby church. So far it's been really great!"}]


# "I'm thrilled for you" cheers the other on and tells nothing of the user's own.
@pytest.mark.parametrize(("said", "fact", "kept"), [
    ("That's great, Maria! Joining a church can be really encouraging. I'm thrilled for you.",
     "The user has just joined a church.", False),
    ("That's great, Maria! Joining a church can be really encouraging. I'm thrilled for you.",
     "The user is thrilled for Maria.", True),
    ("I'm so proud of you, Maria! I joined a church last spring myself.", "The user joined a church last spring.",
     True),
])
def test_a_cheer_for_the_other_is_no_word_of_the_users_own(said, fact, kept, embedder):
    from memvault.curate.extract import grounding_source

    judged(fact, grounding_source([*CHURCH, {"role": "user", "content": said}], embedder=embedder), kept,
           "ungrounded: the user said nothing of themselves")


# What the user says they have is not sought ("I got a temp job" -> "is looking for a job"), nor what they speak
# of with no search or want at all.
@pytest.mark.parametrize(("said", "fact", "kept"), [
    ("I got a temp job to help cover expenses while I look for investors.",
     "The user has been looking for a job to cover expenses.", False),
    ("I got a temp job to help cover expenses while I look for investors.", "The user is looking for investors.",
     True),
    ("I found a new flat last week!", "The user is searching for a new flat.", False),
    ("I have a flat in town but I'm hunting for a bigger flat by the sea.", "The user is looking for a bigger flat.",
     True),
    ("I think you'd love this fantasy novel by Patrick Rothfuss. Great for when you're traveling!",
     "The user is looking for a fantasy novel by Patrick Rothfuss.", False),
    ("I'm after Marley flooring for my dance studio, it's grippy and tough.",
     "The user is looking for Marley flooring for their dance studio.", True),
    ("I have a job, but I'm looking for a new one.", "The user is looking for a new job.", True),
    ("I have a job, but I've been job hunting since May.", "The user is looking for a new job.", True),
])
def test_a_thing_the_user_has_is_not_one_they_seek(said, fact, kept, embedder):
    judged(fact, Source(said, embedder=embedder), kept, "a search")


# A "not" of the user's drops out of a fact only when it negates what the fact says.
@pytest.mark.parametrize(("said", "fact", "kept"), [
    ("The first year was hard, this shop is no cakewalk, and believing in yourself is key to making it work.",
     "The user thinks believing in yourself is key to making a shop work.", True),
    ("The first year was hard, this shop is no cakewalk, and believing in yourself is key to making it work.",
     "The user thinks this shop is a cakewalk.", False),
    ("I'm curious, any more tips for dairy-free baking?", "The user is curious about more tips for dairy-free baking.",
     True),
    ("I don't live in Leeds any more.", "The user lives in Leeds.", False),
    ("I don't like dogs, that's why I have cats.", "The user prefers cats over dogs.", True),
    ("I don't like cats, that's why I have dogs.", "The user prefers cats over dogs.", False),
    # "prevented from", "unable to" say the "not" (LoCoMo's: "a knee injury that prevented her from walking her dogs")
    ("I couldn't walk my dogs because of a knee injury.",
     "A knee injury prevented the user from walking their dogs.", True),
    ("I couldn't walk my dogs because of a knee injury.", "The user walked their dogs despite a knee injury.", False),
    ("I was unable to finish the marathon.", "The user finished the marathon.", False),
])
def test_a_dropped_negation_is_one_of_what_the_fact_says(said, fact, kept, embedder):
    judged_by_meaning(fact, said, kept, embedder, "drops a negation")


RUNNER = [{"role": "assistant", "name": "Sam",
           "content": "I've started to enjoy running in the mornings, it clears my head. What can you do, right?"}]


# "What can you do, right?" asks the user nothing, so a reaction to it is not an answer that may share the act.
@pytest.mark.parametrize(("said", "fact", "kept"), [
    ("Yeah, I get it. Like your morning runs, they're a step towards something good. Keep going, Sam!",
     "The user loves running in the morning.", False),
    ("Yeah, I get it. I run in the mornings too, before work.", "The user runs in the mornings before work.", True),
])
def test_a_rhetorical_question_is_not_answered_with_the_users_own_act(said, fact, kept, embedder):
    from memvault.curate.extract import grounding_source

    source = grounding_source([*RUNNER, {"role": "user", "content": said}], embedder=embedder)
    judged(fact, source, kept, "ungrounded: the user said nothing of themselves")


# The user's past time in a sentence whose verb is present states the past as present (SmolLM2's); a memory of
# it, a past verb, a habit or "since" keep it a past.
@pytest.mark.parametrize(("said", "fact", "kept"), [
    ("I loved taking dance lessons with my friends when I was younger.",
     "The user loves dancing with their friends when the user was younger.", False),
    ("I played the piano when I was a kid.", "The user plays the piano when the user was a kid.", False),
    ("I loved taking dance lessons with my friends when I was younger.",
     "The user loved taking dance lessons with their friends when the user was younger.", True),
    ("Max and I would take long walks in the neighborhood when I was a kid.",
     "Max and the user would take long walks in the neighborhood when the user was a kid.", True),
    ("Roller coasters remind me of when I was a kid.",
     "Roller coasters remind the user of when the user was a kid.", True),
    ("I still have the photos from when I was little.", "The user has photos from when the user was little.", True),
])
def test_a_past_of_the_users_is_not_stated_as_present(said, fact, kept, embedder):
    judged_by_meaning(fact, said, kept, embedder, "a past stated as present")
