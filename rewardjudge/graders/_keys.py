"""The words the content-free screen (``_guards``) reads as no answer: master keys, openers that carry no answer
in many languages (``Thought process:``, ``解``, ``Let's solve this step by step``), and the filler words they are
wrapped in."""

from __future__ import annotations

import functools
import re

import numpy as np

from ..readouts._text import letters
from ._joined import _starts
from ._markup import _trie

# Openers that carry no answer; matched on their letters and digits (``letters``)
MASTER_KEYS: frozenset[str] = frozenset({
    "thought process", "let's solve this problem step by step", "let's think step by step",
    "solution", "answer", "the answer is", "step 1", "reasoning", "explanation", "response",
    "final answer", "here is the answer", "here's the answer", "i think", "sure",
    "boxed",                                   # an empty \boxed{}
    "tool call",                               # the frame of a tool call (thread.tool_call_text)
    # the multilingual master keys of "One Token to Fool LLM-as-a-Judge" (2025), and kin
    "解", "解答", "答案", "答", "かいせつ", "解説", "respuesta", "solución", "réponse", "antwort",
    "lösung", "ответ", "решение",
    # "answer", "solution", "thought process" in more languages
    "回答", "答え", "解析", "解题思路", "思考过程", "정답", "답", "풀이", "해답", "उत्तर", "हल", "الإجابة", "الحل",
    "resposta", "solução", "risposta", "soluzione", "lösungsweg", "antwoord", "oplossing", "svar", "lösning",
    "odpowiedź", "rozwiązanie", "cevap", "çözüm", "jawaban", "penyelesaian", "trả lời", "lời giải", "đáp án",
    "απάντηση", "λύση", "תשובה", "פתרון", "התשובה", "הפתרון",
    # openers that announce reasoning to come
    "step by step", "let me think", "lets think", "let me solve", "lets solve",
    # hunt 20: reasoning announced, in English and in the languages of the keys above
    "thought", "thoughts", "thinking", "thinking process", "reasoning process", "chain of thought",
    "break this down", "break it down",
    # hunt 21: the keys in the plural
    "answers", "final answers", "solutions", "responses", "explanations",
    "जवाब", "समाधान", "चरण दर चरण", "आइए चरण दर चरण सोचते हैं", "चरण दर चरण सोचते हैं", "الجواب", "جواب", "پاسخ", "خطوة بخطوة",
    "لنفكر خطوة بخطوة", "шаг за шагом", "давайте подумаем шаг за шагом", "давайте решим шаг за шагом",
    "давайте решим эту задачу шаг за шагом", "문제를 단계별로 풀어봅시다",
    "відповідь", "розвязання", "крок за кроком", "ステップバイステップ", "ステップバイステップで考えましょう",
    "段階的に考えましょう", "답변", "해결", "단계별로", "단계별로 생각해 봅시다", "yanıt", "adım adım",
    "adım adım düşünelim", "câu trả lời", "từng bước", "hãy suy nghĩ từng bước", "langkah demi langkah",
    "mari berpikir langkah demi langkah", "jawapan", "jibu", "suluhisho", "hatua kwa hatua",
    "tufikirie hatua kwa hatua", "sagot", "উত্তর", "คำตอบ", "பதில்", "étape par étape",
    "réfléchissons étape par étape", "paso a paso", "pensemos paso a paso", "schritt für schritt",
    "denken wir schritt für schritt", "passo a passo", "vamos pensar passo a passo", "passo dopo passo",
    "让我们一步一步地思考", "一步一步", "逐步", "思考過程", "解題思路", "思路",
    # hunt 30: the labels of a solution's parts, and reasoning announced in English
    "analysis", "approach", "result", "results", "output", "conclusion", "summary", "proof", "calculation",
    "calculations", "rationale", "justification", "lets begin", "lets start", "lets analyze", "lets analyse",
    # ... the keys' words in the languages and scripts no list held
    "odpověď", "řešení", "krok za krokem", "odpoveď", "riešenie", "krok po kroku", "pomyślmy krok po kroku",
    "răspuns", "soluție", "soluția", "pas cu pas", "válasz", "megoldás", "lépésről lépésre", "vastaus", "ratkaisu",
    "vaihe vaiheelta", "løsning", "trin for trin", "steg for steg", "steg för steg", "stap voor stap",
    "laten we stap voor stap denken", "βήμα προς βήμα", "εξήγηση", "צעד אחר צעד", "הסבר", "گام به گام", "راه حل",
    "حل", "solusyon", "วิธีทำ", "ทีละขั้นตอน", "தீர்வு", "সমাধান", "መልስ", "პასუხი", "ამოხსნა", "պատասխան",
    "լուծում", "жауап", "шешуі", "хариулт", "જવાબ", "ਜਵਾਬ", "సమాధానం", "ಉತ್ತರ", "ഉത്തരം", "පිළිතුර", "အဖြေ",
    "ចម្លើយ", "ຄຳຕອບ",
    # ... and the labels of reasoning and explanation in the languages of the keys above
    "рассуждение", "рассуждения", "объяснение", "анализ", "давайте подумаем", "пояснення", "分析", "推理",
    "推理过程", "让我想想", "考え方", "설명", "생각해 봅시다", "réfléchissons", "explication",
    "raisonnement", "analyse", "razonamiento", "explicación", "análisis", "überlegung", "erklärung", "begründung",
    "ragionamento", "spiegazione", "analisi", "raciocínio", "explicação", "análise", "suy nghĩ", "giải thích",
    "phân tích", "دعونا نفكر", "الشرح", "التحليل",
    # hunt 33: the end of reasoning announced (``before answering``: ``answer`` is a key, taken before a filler word)
    "answering", "before answering", "before i answer",
    "让我想想", "让我想一想", "我来想一想", "让我们思考一下", "让我思考一下", "我们来分析一下", "解决",   # ``解`` is a key
    # hunt 36: reasoning announced in the languages whose verb comes last (ja, ko, hi), a verb and its ending as one key
    # (``考えてみましょう``), what comes before it filler (``まず``, ``신중하게``, ``ध्यान से``); and the Arabic verbs that
    # carry their subject (``سأفكر``, "I will think")
    "考えてみましょう", "考えてみます", "考えさせてください", "考えます", "分析してみましょう", "分析します",
    "検討してみましょう", "解いてみましょう", "見てみましょう", "確認してみましょう", "整理してみましょう",
    "생각해 보겠습니다", "생각해 볼게요", "생각해 보자", "분석해 보겠습니다", "분석해 봅시다", "풀어 보겠습니다",
    "풀어 봅시다", "살펴보겠습니다", "살펴봅시다", "검토해 보겠습니다", "따져 보겠습니다",
    "सोचते हैं", "सोचने दो", "सोचने दीजिए", "विचार करते हैं", "विश्लेषण करते हैं", "हल करते हैं", "सोचता हूँ",
    "सोचती हूँ", "سأفكر", "سنفكر", "لنفكر", "سأحلل", "لنحلل", "سنحلل", "düşüneyim", "düşünelim", "analiz edeyim",
    "analiz edelim", "inceleyelim",
})

#: hunt 33: a whole sentence that only announces reasoning to come (``I will now think through this step by step.``,
#: ``Let me work this out carefully before answering.``): who will reason (``ANNOUNCERS``), an adverb or none, then a
#: verb of reasoning, read as one master key (``_guards._announce``); the words after it (``this through``, ``before
#: answering``) are ``_FILLER``. A subject or a verb alone is none (``I will.``, ``Work.``), nor is a sentence with a
#: word of content beside it (``We need to think about climate change.``)
ANNOUNCERS = (
    "let me", "lets", "let us", "i will", "ill", "i shall", "i am going to", "im going to", "i need to", "we need to",
    "i must", "we must", "i should", "we should", "i want to", "id like to", "i would like to", "we will", "we are going to",
    "were going to", "i have to", "we have to", "allow me to",
    "je vais", "laissez moi", "laisse moi", "nous allons", "on va", "je dois",                       # fr
    "déjame", "voy a", "vamos a", "necesito", "tengo que",                                          # es
    "lass uns", "lasst uns", "ich werde", "wir werden", "ich muss", "wir müssen",                   # de
    "deixe me", "deixa me", "vou", "vamos", "preciso", "lasciami", "fammi", "devo",                 # pt, it
    # hunt 36: more of pt and it; ru, zh, ar (verb after its subject, as in English)
    "eu vou", "eu preciso", "eu devo", "permita me", "deixem me", "ora", "adesso", "ora devo", "voglio", "dobbiamo",
    "позвольте мне", "дайте мне", "давайте", "мне нужно", "нам нужно", "я должен", "я должна", "сейчас я", "я попробую",
    "让我", "让我们", "我来", "我们来", "我要", "我先", "我将", "我需要", "我们需要", "我们先", "请让我", "我得",
    "دعني", "دعنا", "اسمح لي", "علي أن", "يجب أن",
    "laat me", "laat mij", "laten we", "ik ga", "ik moet", "låt mig", "låt oss", "jag ska", "lad mig", "lad os",
    "la meg", "la oss", "biarkan saya", "izinkan saya", "saya akan", "mari kita", "mari", "hãy để tôi", "để tôi",
    "tôi sẽ", "pozwól że", "pozwólcie że", "muszę", "zamierzam",                     # nl, sv, da, no, id, vi, pl
    "let me take a moment to", "let me take a second to", "give me a moment to",
)
ANNOUNCE_ADVERBS = (", now", "first", "carefully", "just", "quickly", "briefly", "then", "d'abord", "primero",
                     "zuerst", "darüber", "sorgfältig", "gründlich", "prima", "primeiro",
                     "agora", "primeiramente", "bem", "un attimo", "bene", "attentamente",          # hunt 36: pt, it
                     "внимательно", "сначала", "тщательно", "немного", "хорошенько", "сейчас",        # ru
                     "仔细", "认真", "好好", "先", "一步一步", "逐步", "慢慢", "仔细地", "认真地",        # zh
                     "أولا", "بعناية", "قليلا",                                                     # ar
                     "goed", "eerst", "even", "noga", "först", "ordentligt", "lige", "først", "dulu", "sebentar",
                     "kỹ", "cẩn thận", "się", "dokładnie", "najpierw", "dobrze")
REASONING_VERBS = (
    "think", "reason", "work", "figure", "consider", "analyze", "analyse", "solve", "break down", "go through",
    "go over", "walk through", "tackle", "approach", "examine", "evaluate", "look at", "look into", "review", "reflect",
    "calculate", "compute", "determine", "explore", "unpack", "ponder", "deliberate", "think through", "work through",
    "work out", "figure out", "reason through", "mull over", "puzzle out", "dig into", "check", "double check",
    "verify", "explain", "clarify", "walk you through", "break it down", "recall",
    "réfléchir", "analyser", "raisonner", "penser", "examiner", "résoudre",                          # fr
    "pensar", "analizar", "razonar", "reflexionar", "resolver",                                      # es
    "denken", "nachdenken", "überlegen", "analysieren", "lösen",                                    # de
    "analisar", "raciocinar", "refletir", "pensare", "ragionare", "analizzare", "riflettere",       # pt, it
    # hunt 36
    "considerar", "examinar", "verificar", "calcular", "pensar nisso", "considerare", "esaminare", "risolvere",
    "calcolare", "verificare", "pensarci",                                                          # pt, it
    "подумать", "подумаем", "проанализировать", "проанализируем", "разобраться", "разберемся", "рассуждать",
    "порассуждаем", "решить", "решим", "обдумать", "обдумаем", "посчитать", "посчитаем", "рассмотреть",
    "рассмотрим", "проверить", "проверим", "поразмыслить", "подумаю", "разберусь",                  # ru
    "想想", "想一想", "思考", "分析", "考虑", "推理", "算一算", "计算", "看看", "看一看", "检查", "研究",     # zh
    "أفكر", "نفكر", "أحلل", "نحلل", "أحل", "نحل", "أراجع", "نراجع", "أتحقق", "أشرح", "أتأمل", "التفكير",  # ar
    "nadenken", "denken", "nagaan", "analyseren", "tänka", "tänka efter", "fundera", "analysera", "tænke", "tenke",
    "berpikir", "menganalisis", "memikirkan", "suy nghĩ", "phân tích", "zastanowię", "zastanowić", "pomyśleć",
    "pomyślę", "przeanalizować", "przemyśleć", "rethink", "reconsider", "re evaluate", "reevaluate", "think again",
)

#: words an opener wraps its master keys in (``Sure, here is the solution:``, ``Let me think step by step.``): no
#: content beside a master key; without one they may be the answer (``Okay.``). ``_FILLER``: these and ``_FILLER_OF_KEYS``
_FILLER_WORDS = frozenset({
    "let", "lets", "letme", "letus", "ill", "will", "here", "heres", "is", "my", "our", "the", "this", "below",
    "first", "well", "think", "solve", "problem", "question", "carefully", "step", "steps",
    "by", "following", "see", "then", "and", "final", "full", "complete", "detailed", "short", "brief",
    "okay", "alright", "hmm", "of", "course", "certainly", "absolutely",   # hunt 20 ("so": "I think so." answers)
    "correct", "right", "therefore", "thus", "hence", "to", "in", "conclusion", "your",   # hunt 21
    # hunt 33: the words after reasoning announced (``this through``, ``it over``, ``before answering``)
    "now", "through", "it", "out", "about", "over", "down", "into", "at", "together", "closely", "thoroughly",
    "systematically", "logically", "methodically", "deeply", "more", "again", "quickly", "briefly", "just", "task",
    "request", "puzzle", "query", "prompt", "for a moment", "a bit", "one step at a time", "bit by bit", "piece by piece", "some",
    "ok", "first of all", "before", "responding",
    "lass uns", "lasst uns", "ich werde", "denken", "nachdenken", "überlegen", "je vais", "réfléchir", "déjame",
    "pensar", "voy a", "vamos a", "pensiamo", "ragioniamo",
    "让我们", "让我", "我们", "我来", "来", "先", "这个", "问题", "这个问题", "思考", "一下", "仔细", "地",
    # hunt 36: what stands around reasoning announced in pt, it, ru, zh, ja, ko, hi, ar
    "com cuidado", "cuidadosamente", "sobre isso", "nisso", "isso", "primeiro", "attentamente", "con attenzione",
    "un attimo", "un momento", "su questo", "un po", "prima", "внимательно", "тщательно", "над этим", "об этом",
    "сначала", "немного", "хорошенько", "этим", "清楚", "下", "一步一步", "まず", "ちょっと", "慎重に", "よく",
    "じっくり", "では", "それでは", "少し", "順番に", "この問題を", "問題を", "신중하게", "먼저", "차근차근", "천천히",
    "자세히", "잠시", "한번", "이 문제를", "문제를", "우선", "मुझे", "ध्यान से", "पहले", "ज़रा", "थोड़ा", "चलो", "आइए",
    "इस पर", "इसे", "सावधानी से", "हम", "بعناية", "بدقة", "قليلا", "في هذا", "في ذلك", "هذه المسألة", "المسألة", "أولا", "في", "هذا", "ذلك",
    "goed", "erover", "hierover", "efter", "noga", "dengan hati hati", "tentang ini", "kỹ", "cẩn thận", "về điều này",
    "эту задачу", "этот вопрос", "эту проблему", "задачу", "się", "nad tym", "dokładnie", "wait", "one moment", "a moment", "one second", "hold on", "on", "on this",
    "dikkatlice", "önce", "biraz", "şimdi", "bir",
})
#: hunt 24: the filler of the keys' own languages (articles, copulas and particles, "my", "final", "here",
#: "below", "correct"), a key wrapped in them (``最终答案：``, ``La réponse est :``, ``정답은:``) being no answer
#: as ``The final answer is:`` is none. No single Latin letter: ``The answer is A`` answers
_FILLER_OF_KEYS = (
    "是 为 就是 最终 最后 最终的 最后的 我的 我们的 正确 如下 以下 这 这是 过程 は の が 私の 最終 最終的な 正しい 通り です",   # zh, ja
    "은 는 이 제 나의 최종 다음과 같습니다 입니다 है मेरा सही यह नीचे अंतिम היא הוא הסופית คือ",                         # ko, hi, he, th
    "окончательный итоговый итак мой наш правильный такой вот это ниже следующий остаточна остаточний моя мій ось "
    "така такий правильна هي هو النهائية الصحيحة كالتالي هنا نهایی است من",                              # ru, uk, ar, fa
    "la le les est finale final ma mon notre voici correcte suivante el es mi nuestra aquí está correcta siguiente "
    "die der ist lautet endgültige meine unsere richtige folgende minha nossa aqui correta mia ecco corretta",
    "şu son doğru benim là cuối cùng của tôi nya adalah akhir saya",                     # tr, vi, id/ms
)
_FILLER = frozenset({letters(w) for w in (*_FILLER_WORDS, *" ".join(_FILLER_OF_KEYS).split())} - {""})

#: hunt 30: the words a question restated stands under (``Question: ...``, ``The question asks: ...``, ``Q: ...``): an
#: answer of the question and these alone repeats it (``_guards._echo``). No word that answers (``yes``, ``correct``)
ECHO_LABELS = frozenset(letters(w) for w in (
    "question", "questions", "the", "this", "your", "my", "original", "given", "restated", "restating", "restate",
    "asks", "asked", "you", "is", "was", "problem", "task", "prompt", "query", "q", "user", "here", "again"))


# The keys as patterns (``_guards``' opener)

#: digits written for the letters they look like (``Th0ught pr0cess``): a key's letter matches either
_LOOKALIKE_DIGITS = {"o": "0", "i": "1", "l": "1", "z": "2", "e": "3", "a": "4", "s": "5", "g": "9", "t": "7", "b": "8"}


def _chars(form: str) -> "list[str]":
    """A master key's ``letters`` form as one pattern per character: a letter also matches the
    digit that looks like it."""
    return [f"[{c}{_LOOKALIKE_DIGITS[c]}]" if c in _LOOKALIKE_DIGITS else re.escape(c) for c in form]


@functools.lru_cache(maxsize=64)
def _key_forms(extra_keys: tuple[str, ...]) -> "frozenset[str]":
    return frozenset({letters(k) for k in (*MASTER_KEYS, *extra_keys) if isinstance(k, str)} - {""})


def _key_chars(extra_keys: tuple[str, ...]) -> "list[list[str]]":
    """Each master key's ``_chars``; a key that is another and one letter more (``answers``) takes that
    last letter as written, not its look-alike digit: ``Answer 5`` answers, it is no ``Answers``."""
    forms = _key_forms(extra_keys)
    words = []
    for form in sorted(forms):
        chars = _chars(form)
        if len(form) > 1 and form[:-1] in forms:
            chars[-1] = re.escape(form[-1])
        words.append(chars)
    return words


#: numbered steps' headers, two or more in a row, in ``letters`` form (``Step 1: Step 2: Step 3:`` is no answer;
#: ``Step 7`` alone may be one)
_STEP_ONE = "".join(_chars("step")) + r"\d{1,3}(?!\d)"
#: (two or more, written as one then a run: led by a class, skipped in a step where no ``s`` stands)
_STEP = f"{_STEP_ONE}(?:{_STEP_ONE})+"
#: the same over a doubled text (``_doubled``): each character a pair
_STEP_ONE_TWICE = "".join(c + c for c in _chars("step")) + r"(?:\d\d){1,3}(?!\d)"
_STEP_TWICE = f"{_STEP_ONE_TWICE}(?:{_STEP_ONE_TWICE})+"


def _announce(doubled: bool = False) -> str:
    """Hunt 33: reasoning announced (``I will now think``, ``let me work``): who, an adverb or none, a verb of
    reasoning (``_keys.ANNOUNCERS``), each a trie, read as one master key; the subject's shorter forms tried where a
    longer one leaves no verb (``vamos analisar``), a step back of a few letters at most; ``doubled``: over a doubled
    text (``_doubled``)."""
    who, adverb, verb = (_trie((_chars(letters(w)) for w in words), doubled=doubled)
                         for words in (ANNOUNCERS, ANNOUNCE_ADVERBS, REASONING_VERBS))
    return f"(?:{who})(?>{adverb})?(?>{verb})"


@functools.lru_cache(maxsize=64)
def _start_words(keys: tuple[str, ...]) -> "tuple[list[str], ...]":
    """The words an opener is made of: master keys, filler words, a step header's word (``_chars``), and reasoning
    announced (``_announce``: its subjects, adverbs and verbs; hunt 36: a short subject, ``我来``, is followed by an
    adverb or a verb within the first characters ``_joined.opening`` looks at)."""
    spoken = (*ANNOUNCERS, *ANNOUNCE_ADVERBS, *REASONING_VERBS)
    return (*_key_chars(keys), *(list(w) for w in _FILLER), _chars("step"), *(_chars(letters(w)) for w in spoken))


@functools.lru_cache(maxsize=64)
def _opener_starts(keys: tuple[str, ...]) -> np.ndarray:
    """The starts of an opener's words (``_start_words``) as ``_joined.opening`` looks them up, kept by the keys (the
    words' tuple hashed as a cache's key on each call cost about 1 ms)."""
    return _starts(tuple(tuple(w) for w in _start_words(keys)))
