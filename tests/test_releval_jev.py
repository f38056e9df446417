"""Issue 14 item 11 (the Releval prompt-template document): include_images sends
candidates' images as image content parts; the relevance labels as named scales;
Jev's typed-question request, built by a model client and graded through the
probability path, against a fake provider over loopback HTTP."""

from __future__ import annotations

import json
import re

import pytest
from pydantic import BaseModel

from rewardjudge import Scale, StringThread
from rewardjudge.errors import ConfigError, JudgeHTTPError, JudgeResponseError
from rewardjudge.graders._candidate_judge import CandidateJudgeGrader
from rewardjudge.graders._probability_judge import ProbabilityJudgeGrader
from rewardjudge.graders._typed_question import SEARCH_RELEVANCE_QUESTION, TypedQuestionTemplate
from rewardjudge.models import OpenAIModel, RetryPolicy, TypedQuestionClient
from rewardjudge.testing import FakeJudgeServer, FakeTypedQuestionProvider, Fault

NO_WAIT = RetryPolicy(max_retries=2, base_delay=0.0, max_delay=0.0)


# --------------------------------------------------------------------------
# 1. include_images
# --------------------------------------------------------------------------
class Product(BaseModel):
    name: str
    price: float
    photo: str | None = None


PHOTOS = ["https://img.example/milk.png", "https://img.example/cheese.png",
          "data:image/png;base64,iVBORw0KGgo="]


def shop_threads():
    names = ["Oat milk", "Cheese", "Whole milk"]
    return [StringThread([("user", "milk"), ("assistant", json.dumps(
        {"name": n, "price": 1.5 + i, "photo": url}))], metadata={"query": "milk"})
        for i, (n, url) in enumerate(zip(names, PHOTOS))]


def user_text(req) -> str:
    content = req["messages"][-1]["content"]
    if isinstance(content, str):
        return content
    return "\n".join(p["text"] for p in content if p["type"] == "text")


def candidate_reply(req) -> str:
    ids = re.findall(r'<submission id="([a-z0-9]+)">', user_text(req))
    return "".join(f'<candidate id="{i}">\n<reasoning>ok</reasoning>\n<grade id="{i}">3</grade>\n</candidate>\n'
                   for i in ids)


async def test_include_images_sends_image_parts_in_the_order_candidates_are_shown():
    with FakeJudgeServer(candidate_reply) as server:
        async with OpenAIModel(server.url, "vision-judge", max_retries=0) as judge:
            grader = CandidateJudgeGrader("rel", judge, scale="relevance-graded",
                                          completion_model=Product, title_field="name",
                                          image_field="photo", include_images=True, seed=7)
            grades = await grader.grade_batch(shop_threads())
    assert [g.status for g in grades] == ["scored"] * 3
    [req] = server.requests
    content = req["messages"][-1]["content"]
    assert isinstance(content, list) and content[0]["type"] == "text"
    images = [p["image_url"]["url"] for p in content if p["type"] == "image_url"]
    assert all(set(p) == {"type", "image_url"} for p in content if p["type"] == "image_url")
    # the order shown (shuffled, seeded) is the images' order, each named by its candidate id
    order = grades[0].extra["order"]
    assert images == [PHOTOS[i] for i in order]
    shown_ids = re.findall(r'<submission id="([a-z0-9]+)">', content[0]["text"])
    labels = [p["text"] for p in content[1:] if p["type"] == "text"]
    assert labels == [f"Image of candidate {i}:" for i in shown_ids]
    assert [grades[i].extra["candidate_id"] for i in order] == shown_ids
    # the multimodal template, and candidates[].image in its context
    assert "image: attached (https://img.example/milk.png)" in content[0]["text"]


async def test_without_include_images_no_image_is_sent_or_shown():
    with FakeJudgeServer(candidate_reply) as server:
        async with OpenAIModel(server.url, "judge", max_retries=0) as judge:
            grader = CandidateJudgeGrader("rel", judge, completion_model=Product, title_field="name",
                                          image_field="photo")
            grades = await grader.grade_batch(shop_threads())
    assert [g.status for g in grades] == ["scored"] * 3
    body = json.dumps(server.requests)
    assert "image_url" not in body
    assert not any(url in body for url in PHOTOS)  # not even as text
    assert isinstance(server.requests[0]["messages"][-1]["content"], str)


TEMPLATE = """{{#each candidates}}[{{this.id}}|{{#if this.image}}{{this.image}}{{else}}none{{/if}}]
{{/each}}"""


@pytest.mark.parametrize("flag", [True, False])
async def test_candidates_image_is_in_the_context_only_with_the_flag(flag):
    seen = []

    def reply(req):
        seen.append(user_text(req))
        ids = re.findall(r"\[([a-z0-9]+)\|", user_text(req))
        return "".join(f'<candidate id="{i}"><grade id="{i}">1</grade></candidate>' for i in ids)

    with FakeJudgeServer(reply) as server:
        async with OpenAIModel(server.url, "judge", max_retries=0) as judge:
            grader = CandidateJudgeGrader("rel", judge, template=TEMPLATE, system_template="",
                                          completion_model=Product, image_field="photo",
                                          include_images=flag, shuffle=False)
            await grader.grade_batch(shop_threads()[:2])
    shown = re.findall(r"\|([^\]]+)\]", seen[0])
    assert shown == (PHOTOS[:2] if flag else ["none", "none"])
    assert ("include_images" in grader.config()) is flag


def test_include_images_needs_an_image_field():
    with pytest.raises(ConfigError, match="image_field"):
        CandidateJudgeGrader("rel", OpenAIModel("http://127.0.0.1:9/v1", "j"), include_images=True)


# --------------------------------------------------------------------------
# 2. relevance labels as named scales
# --------------------------------------------------------------------------
def test_relevance_scales_carry_the_documents_labels_on_unchanged_grades():
    graded = Scale.get("relevance-graded")
    assert Scale.get("graded", labels="relevance") is graded
    assert (graded.min, graded.max) == (Scale.GRADED.min, Scale.GRADED.max)
    labels = dict(graded.labels)
    assert labels[4] == "Highly Relevant" and labels[1] == "Marginally Relevant"
    assert "Highly Relevant" in dict(Scale.get("relevance-detailed").labels).values()
    assert dict(Scale.get("relevance-binary").labels) == {0: "Not Relevant", 1: "Relevant"}
    for kind in ("binary", "graded", "detailed"):
        s = Scale.get(kind, labels="relevance")
        assert s.grades == Scale.get(kind).grades and s.template_vars()["scale"] == kind
        assert s.name == f"relevance-{kind}"
    # the plain scales are as they were
    assert Scale.BINARY.labels == ((0, "Fail"), (1, "Pass")) and Scale.get("graded") is Scale.GRADED
    with pytest.raises(ConfigError, match="label family"):
        Scale.get("graded", labels="medical")


async def test_candidate_grader_shows_the_relevance_labels_and_branches_on_the_kind():
    # the document's worked template: "- {{this.grade}} ({{this.label}})"
    template = """{{#if (eq scale "graded")}}GRADED{{/if}}
{{#each scale_labels}}
- {{this.grade}} ({{this.label}})
{{/each}}
{{#each candidates}}<c id="{{this.id}}"/>{{/each}}"""
    seen = []

    def reply(req):
        seen.append(user_text(req))
        ids = re.findall(r'<c id="([a-z0-9]+)"/>', user_text(req))
        return "".join(f'<candidate id="{i}"><grade id="{i}">4</grade></candidate>' for i in ids)

    with FakeJudgeServer(reply) as server:
        async with OpenAIModel(server.url, "judge", max_retries=0) as judge:
            grader = CandidateJudgeGrader("rel", judge, scale="relevance-graded", template=template,
                                          system_template="")
            [g] = await grader.grade_batch(shop_threads()[:1])
    assert g.value == 1.0 and g.extra["scale"] == "relevance-graded"
    assert seen[0].startswith("GRADED")
    assert "- 4 (Highly Relevant)" in seen[0] and "- 1 (Marginally Relevant)" in seen[0]


def test_typed_question_sees_the_relevance_labels():
    source = ('{"instructions": "Rate `result` for `query`.", "criteria": '
              '[{{#each scale_labels}}"{{this.label}}"{{#unless @last}}, {{/unless}}{{/each}}]}')
    q = TypedQuestionTemplate(source, scales=[Scale.get("relevance-graded")]).render("relevance-graded")
    assert q.criteria[-1] == "Highly Relevant" and q.criteria[1] == "Marginally Relevant"


# --------------------------------------------------------------------------
# 3. Jev: the typed-question request, the client and the grader
# --------------------------------------------------------------------------
class Movie(BaseModel):
    title: str
    year: int
    genre: str


EMPIRE = StringThread([("user", "star wars"), ("assistant", json.dumps(
    {"title": "The Empire Strikes Back", "year": 1980, "genre": "Sci-Fi"}))],
    metadata={"query": "star wars"})

BINARY_CRITERIA = ["The result does not help with what the query is looking for",
                   "The result helps with what the query is looking for"]


async def test_client_builds_the_documents_request_and_reads_the_probabilities():
    with FakeTypedQuestionProvider(lambda req: {"relevance": [0.1, 0.9]}) as provider:
        async with TypedQuestionClient(provider.url, "jev-latest", retry_policy=NO_WAIT) as jev:
            state = {"query": "star wars", "result": {"title": "The Empire Strikes Back",
                                                      "fields": {"year": 1980, "genre": "Sci-Fi"}}}
            instructions = "How well does `result` match what the searcher is looking for with `query`?"
            dist = await jev.typed_distribution(state, instructions, BINARY_CRITERIA, ["0", "1"])
    assert provider.requests == [{
        "model": "jev-latest",
        "state": {"query": "star wars", "result": {"title": "The Empire Strikes Back",
                                                  "fields": {"year": 1980, "genre": "Sci-Fi"}}},
        "questions": {"relevance": {"type": "score", "instructions": instructions,
                                    "criteria": BINARY_CRITERIA}}}]
    assert dist.probs == {"0": 0.1, "1": 0.9} and dist.top_k is None and dist.attempts == 1


async def test_probability_grader_grades_the_documents_example_through_the_client():
    with FakeTypedQuestionProvider(lambda req: [0.0, 0.0, 0.1, 0.3, 0.6]) as provider:
        async with TypedQuestionClient(provider.url, retry_policy=NO_WAIT) as jev:
            grader = ProbabilityJudgeGrader("relevance", jev, scale="relevance-graded",
                                            completion_model=Movie, title_field="title")
            g = await grader.grade(EMPIRE)
    [req] = provider.requests
    assert req["model"] == "jev-latest"
    assert req["state"] == {"query": "star wars", "result": {
        "title": "The Empire Strikes Back", "fields": {"year": 1980, "genre": "Sci-Fi"}}}
    q = req["questions"]["relevance"]
    assert q["type"] == "score" and len(q["criteria"]) == 5
    assert q["instructions"] == ("How well does `result` match what the searcher is looking "
                                 "for with `query`?")
    assert g.status == "scored"
    assert g.extra["expected_grade"] == pytest.approx(3.5)
    assert g.value == pytest.approx(3.5 / 4) and g.extra["most_likely_grade"] == 4
    assert g.extra["scale"] == "relevance-graded"


async def test_one_request_per_result_and_a_structured_query_keeps_its_shape():
    query = {"q": "star wars", "decade": "1980s"}
    results = [{"title": "The Empire Strikes Back", "year": 1980, "genre": "Sci-Fi"},
               {"title": "Airplane!", "year": 1980, "genre": "Comedy"}]
    threads = [StringThread([("user", "star wars"), ("assistant", json.dumps(r))],
                            metadata={"query": query}) for r in results]

    def responder(req):
        good = req["state"]["result"]["fields"]["genre"] == "Sci-Fi"
        return {"relevance": [0.05, 0.95] if good else [0.9, 0.1]}

    with FakeTypedQuestionProvider(responder) as provider:
        async with TypedQuestionClient(provider.url, retry_policy=NO_WAIT) as jev:
            grader = ProbabilityJudgeGrader("relevance", jev, scale="binary", completion_model=Movie,
                                            title_field="title", evaluation_description="Movie search")
            grades = await grader.grade_batch(threads)
    assert len(provider.requests) == 2
    assert [r["state"]["query"] for r in provider.requests] == [query, query]
    assert sorted(r["state"]["result"]["title"] for r in provider.requests) == \
        ["Airplane!", "The Empire Strikes Back"]
    instructions = provider.requests[0]["questions"]["relevance"]["instructions"]
    assert instructions["search"] == "Movie search" and "`query`" in instructions["question"]
    assert grades[0].value == pytest.approx(0.95) and grades[1].value == pytest.approx(0.1)


def test_instructions_address_content_by_path():
    price_question = ('{"instructions": "Is `result.fields.price` fair for `query`?", "criteria": '
                      '[{{#each scale_labels}}"{{this.label}}"{{#unless @last}}, {{/unless}}{{/each}}]}')
    jev = TypedQuestionClient("http://127.0.0.1:9/v1")
    grader = ProbabilityJudgeGrader("price", jev, scale="binary", question_template=price_question)
    assert grader.question.instructions == "Is `result.fields.price` fair for `query`?"
    chat_question = price_question.replace("`result.fields.price`", "`completion`")
    with pytest.raises(ConfigError, match="`completion`"):
        ProbabilityJudgeGrader("price", jev, scale="binary", question_template=chat_question)


async def test_provider_errors_are_retried_then_unscored_and_bad_bodies_refused():
    with FakeTypedQuestionProvider(lambda req: [0.2, 0.8]) as provider:
        async with TypedQuestionClient(provider.url, retry_policy=NO_WAIT) as jev:
            grader = ProbabilityJudgeGrader("relevance", jev, scale="binary")
            provider.enqueue(Fault.http(503))
            g = await grader.grade(EMPIRE)
            assert g.status == "scored" and g.attempts == 2 and g.value == pytest.approx(0.8)
            provider.enqueue(*[Fault.http(429)] * 3)
            g = await grader.grade(EMPIRE)
            assert g.status == "unscored" and "429" in g.error and g.attempts == 3
            provider.enqueue(*[Fault.reply('{"answers": {"relevance": {"probabilities": [0.7]}}}')] * 3)
            with pytest.raises(JudgeResponseError, match="2 probabilities"):
                await jev.typed_distribution({"query": "q", "result": {"title": "t", "fields": {}}},
                                             "Is `result` about `query`?", BINARY_CRITERIA, ["0", "1"])
            provider.enqueue(*[Fault.reply('{"answers": {"relevance": {"probabilities": [0.7, 0.9]}}}')] * 3)
            with pytest.raises(JudgeResponseError, match="more than 1"):
                await jev.typed_distribution({"query": "q", "result": {"title": "t", "fields": {}}},
                                             "Is `result` about `query`?", BINARY_CRITERIA, ["0", "1"])


async def test_the_fake_provider_refuses_a_request_of_another_shape():
    with FakeTypedQuestionProvider() as provider:
        async with TypedQuestionClient(provider.url, retry_policy=NO_WAIT, question_type="choice") as jev:
            with pytest.raises(JudgeHTTPError, match="type must be 'score'"):
                await jev.ask({"query": "q", "result": {"title": "t", "fields": {}}}, "Is `result` ok?",
                              BINARY_CRITERIA)


async def test_the_client_does_not_chat():
    jev = TypedQuestionClient("http://127.0.0.1:9/v1")
    with pytest.raises(ConfigError, match="does not chat"):
        await jev.chat([{"role": "user", "content": "hi"}])


def test_default_typed_question_is_the_documents_binary_question():
    q = TypedQuestionTemplate(SEARCH_RELEVANCE_QUESTION).render("binary")
    assert list(q.criteria) == BINARY_CRITERIA
    assert q.instructions == "How well does `result` match what the searcher is looking for with `query`?"
