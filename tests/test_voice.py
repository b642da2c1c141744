"""A memory is a statement about the user in the third person (curate.voice): what a weak model writes in
the user's own voice is put in the third person; a greeting, a remark to the other speaker, a sentence
about someone else or one that opens with a pronoun only the chat resolves is refused, with its reason.
The cases are written for this test (none taken from LoCoMo or from a model's output); the last tests go
through the real add path (vault, git, index, MiniLM) with a scripted model."""

import json

import pytest

from memvault.curate.voice import misnamed, mixed_voice, names_of_user, sentences, user_fact
from tests.support.scripted_llm import ScriptedLLM
from tests.test_curated_add import EXTRACT, RECONCILE, live_texts, memvault_at

PUT_IN_THE_THIRD_PERSON = [
    ("I've adopted two cats", "The user has adopted two cats"),
    ("I'd been meaning to learn the cello for years", "The user had been meaning to learn the cello for years"),
    ("I'd gone to Lyon twice before", "The user had gone to Lyon twice before"),
    ("I'd love to see Lyon again", "The user would love to see Lyon again"),
    ("I'd rather stay in on Fridays", "The user would rather stay in on Fridays"),
    ("Yay! I passed my driving test on Monday.", "The user passed their driving test on Monday."),
    ("I teach maths at a high school", "The user teaches maths at a high school"),
    ("I usually fly to Oslo in June", "The user usually flies to Oslo in June"),
    ("I watch films and I also go bouldering", "The user watches films and the user also goes bouldering"),
    ("My brother and I run a bakery", "The user's brother and the user run a bakery"),
    ("I don't drink alcohol", "The user doesn't drink alcohol"),
    ("I’m allergic to peanuts", "The user is allergic to peanuts"),
    ("I'd like to visit Kyoto someday", "The user would like to visit Kyoto someday"),
    ("I can't stand horror films", "The user can't stand horror films"),
    ("I quit smoking in 2019", "The user quit smoking in 2019"),
    ("Mum gave me her old piano", "Mum gave the user her old piano"),
    ('My motto is "I never give up"', 'The user\'s motto is "I never give up"'),
    ("Oh, I restored that bike myself", "The user restored that bike themselves"),
]

KEPT_AS_THEY_ARE = [
    "The user lives in Denver.",
    "The user's daughter started school in September.",
    "User prefers tea to coffee.",
    "Likes hiking in the Alps.",  # mem0's own subjectless style
    "Name is Priya.",
    "Never reply with emojis.",  # an instruction: the write policy's rule candidate
    "The user thinks you can't beat fresh bread.",  # a generic "you" in a fact about the user
    "The user moved to Austin, Texas.",  # a place after a comma is no one called by name
    "The user thanked Omar for lending them his car for the move to Leeds.",  # courtesy, and a fact in it
    "Thanks to her tutor, the user passed the bar exam.",
    "The user congratulated Sofia on passing her bar exam.",
    "The user asked Omar for help with the move to Leeds.",  # a request, with what it is about
    'The user\'s teacher told them "you have talent".',
    "The user bets on the horses every Saturday.",  # a pastime, not a guess
    "The user lets their neighbours know when the bins go out.",
    "The user keeps their budget in mind when shopping for furniture.",
    "The user will keep that in mind when planning the trip to Lisbon.",  # what is kept in mind is said
]

REFUSED = [
    ("You'll love the new place!", "said to the other speaker"),
    ("I hope you feel better soon", "said to the other speaker"),
    ("Good luck with your exam, I'm rooting for you", "said to the other speaker"),
    ("Sounds lovely, Priya! The garden party was such fun.", "said to the other speaker"),  # called by name
    ("Tomas! I finally got the keys to the flat.", "said to the other speaker"),
    ("Thanks for sharing it with the user!", "said to the other speaker"),  # SmolLM2's thanks, in its voice
    ("Let the user know if there's anything else the user can do to help!", "said to the other speaker"),
    ("Keep me posted on the move!", "said to the other speaker"),
    ("Jonas plays the drums in a band.", "not about the user"),
    ("The museum opens at nine on Sundays.", "not about the user"),
    ("Congrats on the new job!", "not about the user"),
    ("They moved to Spain last year.", "not self-contained"),
    ("It is the best pizza in town.", "not self-contained"),
    ("She's been my best friend since school.", "not self-contained"),
    ("We went hiking on Sunday.", "not self-contained"),
    ("The user thanks Sofia for her kind words.", "small talk"),  # courtesy with nothing else in it
    ("The user congratulates Omar on his news.", "small talk"),
    ("The user wishes Lena good luck.", "small talk"),
    ("The user asked Ana whether the museum opens on Mondays.", "the user's question"),  # a question, reported
    ("The user wondered how long the flight to Lima takes.", "the user's question"),
    ("The user bets they bring lots of joy.", "a guess"),  # SmolLM2, of the other's children
    ("I guess it's just one of those things with new cars.", "a guess"),
    ("The user reckons the match will be cancelled.", "a guess"),
]


@pytest.mark.parametrize(("written", "stored"), PUT_IN_THE_THIRD_PERSON)
def test_the_users_own_voice_is_put_in_the_third_person(written, stored):
    assert user_fact(written) == (stored, None)


@pytest.mark.parametrize("written", KEPT_AS_THEY_ARE)
def test_a_fact_already_about_the_user_is_kept_as_written(written):
    assert user_fact(written) == (written, None)


@pytest.mark.parametrize(("written", "why"), REFUSED)
def test_what_is_no_statement_about_the_user_is_refused_with_its_reason(written, why):
    fact, reason = user_fact(written)
    assert reason is not None and reason.startswith(why), reason


def test_a_user_who_gave_their_name_is_named_in_their_facts():
    names = names_of_user("Hi, I'm Priya and I work nights. Priya here, again:")
    assert names == {"Priya"}
    assert user_fact("Priya works night shifts.", names) == ("Priya works night shifts.", None)
    assert user_fact("Priya works night shifts.")[1].startswith("not about the user")
    assert names_of_user("I'm happy, thanks") == frozenset()  # no capital: no name
    assert names_of_user("Thanks, Bob!") == frozenset()  # the other speaker's name is not the user's
    # ... but the name the other speaker calls the user by is
    assert names_of_user("It was great!", "Hey Priya! How was the trip?") == {"Priya"}
    assert names_of_user("It was great!", "That sounds amazing, Priya! Tell me more.") == {"Priya"}
    assert names_of_user("It was great!", "I loved Lisbon, Portugal. And you?") == frozenset()


# -- through the add path ------------------------------------------------------------------------------

@pytest.fixture
def memvault(tmp_path):
    yield from memvault_at(tmp_path)


def test_a_weak_models_copies_are_stored_in_the_third_person_and_its_chatter_refused(memvault):
    llm = ScriptedLLM([(EXTRACT, json.dumps([  # extraction keeps at most 3
        "Woo! I finally finished my first marathon last Sunday.",  # the user's own words, copied
        "You must be so proud of the kids!",  # to the other speaker
        "Dana loves running too.",  # about someone else
    ]))], default="[]")
    messages = [{"role": "assistant", "content": "Dana here! How was your weekend?", "name": "Dana"},
                {"role": "user", "content": "Hey Dana! Great to hear from you! Woo! I finally finished my first "
                                            "marathon last Sunday. The kids cheered at the finish."}]
    result = memvault.add(messages, llm=llm)
    assert live_texts(memvault) == ["The user finally finished their first marathon last Sunday."]
    reasons = {e.new_memory: e.reason for e in result.events if e.event == "DROP"}
    assert reasons["You must be so proud of the kids!"].startswith("said to the other speaker")
    assert reasons["Dana loves running too."].startswith("not about the user")


def test_a_first_person_update_keeps_the_memorys_id_in_the_third_person(memvault):
    first = memvault.add("I live in Porto", llm=ScriptedLLM([(EXTRACT, json.dumps(["The user lives in Porto."]))],
                                                            default="[]")).events[0]
    decisions = [{"fact": 0, "event": "UPDATE", "id": "0", "text": "I moved from Porto to Braga"}]
    llm = ScriptedLLM([(EXTRACT, json.dumps(["The user moved from Porto to Braga."])),
                       (RECONCILE, json.dumps(decisions))], default="[]")
    result = memvault.add("I moved from Porto to Braga last month", llm=llm)
    assert [(e.event, e.id, e.new_memory) for e in result.events if e.event != "DROP"] == [
        ("UPDATE", first.id, "The user moved from Porto to Braga")]


# "The user is Max" says who the user is: only a name the user gives themselves, or is called by, says it.
@pytest.mark.parametrize(("said", "answered", "fact", "kept"), [
    ("Max, the neighbours' kid, plays the violin.", "", "The user is Max, the neighbours' kid.", False),
    ("My dog is called Biscuit and she loves the beach.", "", "The user is Biscuit.", False),
    ("Ask Jonas, he knows the way.", "", "The user's name is Jonas.", False),
    ("I'm Alice and I love green tea.", "", "The user is Alice.", True),
    ("Good, thanks! Just back from the gym.", "Hey Caroline! How are you?", "The user is Caroline.", True),
    ("My name is Bo, by the way.", "", "The user's name is Bo.", True),
    ("I'm a proud Canadian, eh.", "", "The user is Canadian.", True),
    ("Max, the neighbours' kid, plays the violin.", "", "The user is happy.", True),  # no name: not this rule's
])
def test_a_name_the_user_did_not_give_themselves_is_not_who_they_are(said, answered, fact, kept):
    reason = misnamed(fact, said, names_of_user(said, answered))
    assert (reason is None) == kept, reason


# A weak model's text of several sentences: its sentences, each a fact of its own once the whole is refused.
@pytest.mark.parametrize(("text", "parts"), [
    ("Sounds great, Mel! I've been married for 10 years now! How long have you been married?",
     ["Sounds great, Mel!", "I've been married for 10 years now!", "How long have you been married?"]),
    ("I got a bowl at the market. It reminds me of my trip.",
     ["I got a bowl at the market. It reminds me of my trip."]),
    ("I saw Dr. Patel on Monday. My knee is better.", ["I saw Dr. Patel on Monday.", "My knee is better."]),
    ("J. K. Rowling is my favourite. I read every book.", ["J. K. Rowling is my favourite.", "I read every book."]),
    ("The user said \"I moved. I love it.\" today.", ["The user said \"I moved. I love it.\" today."]),
    ("The user said 'Oh, it's bad. My face gets puffy.'", ["The user said 'Oh, it's bad. My face gets puffy.'"]),
    ("I live in Porto.", ["I live in Porto."]),
])
def test_a_text_is_split_into_its_sentences_but_not_inside_quotes_or_after_a_title(text, parts):
    assert sentences(text) == parts


@pytest.mark.parametrize(("written", "why"), [
    ("The user totally gets it.", "ends with 'it'"),
    ("The user is really excited about them too.", "ends with 'them too'"),
    ("So much that I got tattoos of them on my arm.", "opens with 'So much that'"),
    ("Which helped me a lot with the move.", "opens with 'Which'"),
    ("And so much that I cried.", "opens with 'So much that'"),
    ("The user will definitely keep that in mind.", "'keep that in mind'"),  # advice taken, not said what
    ("I'll keep it in mind, thanks!", "'keep it in mind'"),
    ("Yea, the user believes so!", "ends with 'believes so'"),  # SmolLM2's, of "And yea, I believe so!"
    ("I hope so.", "ends with 'hopes so'"),
])
def test_a_fact_that_leans_on_what_the_chat_said_is_not_self_contained(written, why):
    reason = user_fact(written)[1]
    assert reason is not None and reason.startswith("not self-contained") and why in reason, reason


def test_a_made_thing_the_user_is_proud_of_is_a_fact():
    assert user_fact("I made a painting and I'm proud of it.")[1] is None


def test_a_refused_text_keeps_the_facts_among_its_chatter(memvault):
    said = ("Hey Gina! Still following my passion for dance. I'm still searching for a place to open my studio. "
            "How about you?")
    written = ["Sounds great, Gina! I'm still searching for a place to open my studio. How are you doing?"]
    llm = ScriptedLLM([(EXTRACT, json.dumps(written))], default="[]")
    result = memvault.add(said, llm=llm)
    assert live_texts(memvault) == ["The user is still searching for a place to open their studio."]
    drops = {e.new_memory: e.reason for e in result.events if e.event == "DROP"}
    assert drops["Sounds great, Gina!"].startswith("said to the other speaker")
    assert drops["How are you doing?"]


def test_advice_taken_without_saying_what_it_was_is_dropped_from_a_text_of_several(memvault):
    said = "Sounds cool, man! I'm super busy with my music stuff at the moment. I'll keep it in mind. Great work, dude!"
    written = ["The user is super busy with their music stuff at the moment. The user will keep it in mind. "
               "Great work, dude!"]  # SmolLM2's, kept whole before
    result = memvault.add(said, llm=ScriptedLLM([(EXTRACT, json.dumps(written))], default="[]"))
    assert live_texts(memvault) == ["The user is super busy with their music stuff at the moment."]
    drops = {e.new_memory: e.reason for e in result.events if e.event == "DROP"}
    assert "'keep it in mind' does not say what" in drops["The user will keep it in mind."]


def test_a_sentence_copied_with_its_conjunction_is_the_sentence():
    assert user_fact("And there's a chance I'll be visiting Edinburgh in the spring.") == (
        "There's a chance the user will be visiting Edinburgh in the spring.", None)
    assert user_fact("But I moved to Porto last year.") == ("The user moved to Porto last year.", None)


def test_pointing_at_something_shown_is_small_talk():
    assert user_fact("Look what letter I received yesterday!")[1].startswith("small talk")
    assert user_fact("Check out this pic of my dogs at the beach.")[1].startswith("small talk")
    assert user_fact("Here's a picture of me at the shelter.")[1].startswith("small talk")
    assert user_fact("I checked out a new library yesterday.")[1] is None


def test_a_sentence_of_chatter_is_kept_only_when_it_says_the_user(memvault):
    said = "That must have been hard, Sam. I started running again last month. It's never too late to change."
    written = ["That must have been hard, Sam. Remember, it's never too late to change. I started running again."]
    result = memvault.add(said, llm=ScriptedLLM([(EXTRACT, json.dumps(written))], default="[]"))
    assert live_texts(memvault) == ["The user started running again."]
    drops = {e.new_memory: e.reason for e in result.events if e.event == "DROP"}
    assert drops["Remember, it's never too late to change."].startswith("not about the user")


def test_a_text_refused_for_what_it_says_is_refused_whole(memvault):
    """Only the voice's refusals of form (chatter) split a text: one that adds a name the user did not say
    is the model's invention, and its other sentences are not trusted either."""
    written = ["The user works as a nurse. The user's sister lives in Paris."]
    result = memvault.add("I work nights as a nurse.", llm=ScriptedLLM([(EXTRACT, json.dumps(written))], default="[]"))
    assert live_texts(memvault) == []
    assert [e.new_memory for e in result.events if e.event == "DROP"] == written


@pytest.mark.parametrize(("written", "kept"), [
    ("The user is here for you, Sam.", False),  # said to Sam
    ("The user will always be there for you, Jo. Progress takes time.", False),
    ("The user went hiking with their friend, Sam.", True),  # no "you": the friend is Sam
    ("The user told Sam you can't rush sourdough.", True),  # a generic "you", no name after a comma
])
def test_a_name_after_a_comma_in_a_text_that_says_you_is_the_one_addressed(written, kept):
    assert (user_fact(written)[1] is None) == kept, user_fact(written)


def test_a_text_in_two_voices_is_refused_whole(memvault):
    """Its "I" may be the model's or the other speaker's: none of its sentences is trusted."""
    written = ["I'm so proud of my crew for the bake sale. The user is thrilled with the idea."]
    said = "A bake sale for the shelter is such a lovely idea. Can't wait to hear how it goes!"
    result = memvault.add(said, llm=ScriptedLLM([(EXTRACT, json.dumps(written))], default="[]"))
    assert live_texts(memvault) == []
    drops = {e.new_memory: e.reason for e in result.events if e.event == "DROP"}
    assert drops[written[0]].startswith("mixes voices")


@pytest.mark.parametrize(("written", "mixed"), [
    ("The user is glad i could help", True),  # SmolLM2's lower-case "i"
    ("The user drinks green tea, i.e. sencha, every morning.", False),
])
def test_a_lower_case_i_is_a_voice_too(written, mixed):
    assert (mixed_voice(written) is not None) == mixed


def test_thanks_in_a_later_sentence_are_dropped_and_the_fact_before_kept(memvault):
    said = "Thanks, Jo! I'm gonna keep on believing in myself. Thanks for the kind words!"
    written = ["The user is gonna keep on believing in themselves. Thanks for the kind words!"]  # SmolLM2's
    result = memvault.add(said, llm=ScriptedLLM([(EXTRACT, json.dumps(written))], default="[]"))
    assert live_texts(memvault) == ["The user is gonna keep on believing in themselves."]
    drops = {e.new_memory: e.reason for e in result.events if e.event == "DROP"}
    assert drops["Thanks for the kind words!"].startswith("said to the other speaker")


@pytest.mark.parametrize(("written", "stored"), [
    ("The user I'm off to the climbing gym tonight!", "The user is off to the climbing gym tonight!"),
    ("The user said 'honestly, I'm allergic to cats, so I've never had one.'",  # a quote keeps its "I"
     "The user said 'honestly, I'm allergic to cats, so I've never had one.'"),
    ("The user said: I like tea", "The user said: I like tea"),  # so do words reported after a colon
])
def test_the_users_words_copied_after_the_user_or_in_single_quotes_are_one_voice(written, stored):
    assert mixed_voice(written) is None
    assert user_fact(written) == (stored, None)
