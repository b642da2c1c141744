"""The configured LLM as a second judge of a fact the local grounding rules refused for a soft reason.

The rules (curate.grounding) judge closeness by an embedder and shared words: a paraphrase they cannot
see ("I relocated to Denver" -> "lives in Denver") is refused as "not close in meaning". A capable model
sees it. So, when a fact is refused only for closeness (`grounding.soft_refusal`: its names, numbers and
dates come from the source, no meaning change was found, it is no wreck, no prompt leak and no secret),
and the settings let the model judge (`curation.judge`), the model is asked one short question: does
the user's message state this fact about the user? Only a clean `{"verdict": "yes"}` keeps the fact;
"no", anything else, an error or a timeout keeps the refusal (the reason says what the model answered).
A fact that names the person the user talks to is not asked about (`asks`): small models read courtesy
("Thanks, Jon!") as a statement ("The user appreciates Jon's support"). Nothing is cached: each add asks
afresh.

`curation.judge`: off, never; on, always; auto, unless the model is marked weak (`curation.weak_models`,
the bundled SmolLM2 by default: it says yes to anything) or no model is named (a scripted one).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from memvault.curate import prompts
from memvault.curate.grounding import Source, closeness_only, fact_problem
from memvault.curate.jsonish import strip_thinking
from memvault.curate.llm import LLM
from memvault.errors import LLMError
from memvault.settings import CurationSettings, LLMSettings, model_marked

YES, NO, UNCLEAR = "yes", "no", "unclear"


@dataclass(frozen=True)
class Judge:
    """Asks `llm` whether what the user said states a fact (`verdict`)."""

    llm: LLM

    def verdict(self, fact: str, said: str, context: str = "") -> str:
        """YES only for a clean {"verdict": "yes"}; NO for a clean no; UNCLEAR for anything else."""
        user = prompts.fill(prompts.JUDGE_INPUT, context=context.strip() or "(none)", message=said.strip(),
                            fact=fact.strip())
        try:
            answer = self.llm.complete([{"role": "system", "content": prompts.JUDGE},
                                        {"role": "user", "content": user}], json_schema=prompts.JUDGE_SCHEMA)
        except LLMError:
            return UNCLEAR
        return clean_verdict(answer)


def judged_problem(text: str, source: Source, judge: Judge | None, speakers: tuple[str, ...] = (),
                   evidence: str | None = None) -> str | None:
    """Why a fact is not supported by `source` (grounding.fact_problem; the prompts' examples copied are
    refused too), or None. A refusal for closeness alone is put to `judge`, when there is one and the fact
    names none of the other `speakers`: a clean yes keeps the fact. An add, a session's end and an import
    judge their facts so."""
    reason = fact_problem(text, source, evidence, prompts.EXAMPLE_FACTS)
    if judge is not None and closeness_only(reason) and asks(text, speakers):
        verdict = judge.verdict(text, source.said, source.context)
        reason = None if verdict == YES else refusal(reason, verdict)
    return reason


def clean_verdict(answer: object) -> str:
    """The verdict of an answer that is exactly one JSON object {"verdict": "yes" | "no"}, else UNCLEAR
    (a fenced block, prose around it, a second object, a loop: not clean)."""
    try:
        value = json.loads(strip_thinking(answer)) if isinstance(answer, str) else None
    except ValueError:
        return UNCLEAR
    if isinstance(value, dict) and set(value) == {"verdict"} and value["verdict"] in (YES, NO):
        return value["verdict"]
    return UNCLEAR


def asks(fact: str, speakers: tuple[str, ...]) -> bool:
    """Whether the judge may be asked about `fact`: not when it names the person the user talks to (a
    named speaker of the other turns). "The user appreciates Jon's support" is read into "Thanks, Jon!";
    on LoCoMo's conversations 0-4 a 1.5B judge said yes to 5 such facts given for the wrong turn."""
    words = set(re.findall(r"\w+", fact.casefold()))
    return not any(set(re.findall(r"\w+", name.casefold())) & words for name in speakers)


def refusal(reason: str, verdict: str) -> str:
    """The refusal's reason once the judge was asked and did not say yes."""
    if verdict == NO:
        return f"{reason}; the curation model also judged it not said"
    return f"{reason}; the curation model gave no clear verdict"


def judge_for(curation: CurationSettings, llm_settings: LLMSettings, llm: LLM) -> Judge | None:
    """The judge the settings allow for `llm` (described by `llm_settings`), or None."""
    if curation.judge == "off":
        return None
    if curation.judge == "on":
        return Judge(llm)
    named = f"{llm_settings.local_model}{llm_settings.model}".strip()
    if not named or model_marked(curation.weak_models, llm_settings):
        return None
    return Judge(llm)
