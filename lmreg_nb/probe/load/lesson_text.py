"""The words of the lesson workload: a teacher's instructions, a lesson, students' questions.

All in Chinese, as the course apps send them, shipped here (no network). The
lesson is drawn from a small corpus of sentences by a seeded generator: the
same seed gives the same text (every student of one run reads the same
lesson), a new run gets a new seed, so a server's prefix cache kept from an
earlier run never makes the first student look served from cache. Its length
is in characters; :mod:`lmreg_nb.probe.load.workload` sizes it in the server's tokens.
"""

from __future__ import annotations

import random

__all__ = ["SYSTEM_MESSAGE", "lesson_text", "question"]

#: The course app's instructions (about 150 tokens).
SYSTEM_MESSAGE = (
    "你是一位耐心的中学科学老师，正在和学生一起学习下面的课文。"
    "请只根据课文内容回答学生的问题；课文里没有的内容，请直接说明课文没有提到，不要编造。"
    "回答要用简体中文，语言简单清楚，适合十三到十五岁的学生阅读；先给出结论，再用一两个生活中的例子说明。"
    "如果学生的问题不清楚，请先问清楚他想知道什么。"
    "不要替学生完成作业或考试题，而是一步一步引导他自己思考。"
    "每次回答控制在三百字以内，必要时分点列出。"
)

_SENTENCES = (
    "植物的叶子里有叶绿体，叶绿体能吸收阳光中的能量。",
    "在光合作用中，植物把二氧化碳和水变成葡萄糖，并放出氧气。",
    "葡萄糖是植物生长所需要的养料，一部分会转变成淀粉储存起来。",
    "根从土壤中吸收水分和无机盐，水通过茎里的导管运到叶子。",
    "叶子表面有许多气孔，二氧化碳从气孔进入，氧气和水蒸气从气孔出去。",
    "光照越强，光合作用通常越快，但光照太强时气孔会关闭。",
    "温度也会影响光合作用，太冷或太热都会让它变慢。",
    "动物吃植物，人又吃动物和植物，所以光合作用是几乎所有食物的来源。",
    "呼吸作用和光合作用相反，它分解葡萄糖，放出生命活动需要的能量。",
    "白天植物既进行光合作用也进行呼吸作用，夜晚只进行呼吸作用。",
    "地球上的水在不停地循环：海洋和湖泊里的水受热蒸发，变成水蒸气。",
    "水蒸气上升到高空，遇冷凝结成小水滴，小水滴聚在一起形成云。",
    "云里的水滴越来越大，就会以雨、雪或冰雹的形式降到地面。",
    "落到地面的水一部分渗入地下成为地下水，一部分沿着河流流回海洋。",
    "植物的蒸腾作用也把大量的水送回空气中，参与水循环。",
    "森林能涵养水源，减少水土流失，所以保护森林就是保护水资源。",
    "物体受到力的作用，运动状态就可能改变，比如由静止变为运动。",
    "牛顿第一定律告诉我们：一切物体在没有受到外力时，总保持静止或匀速直线运动。",
    "汽车突然刹车时，乘客会向前倾，这是因为人具有惯性。",
    "摩擦力的方向总是和物体相对运动的方向相反。",
    "在冰面上走路容易滑倒，是因为冰面光滑，摩擦力很小。",
    "声音是由物体的振动产生的，振动停止，发声也就停止。",
    "声音的传播需要介质，它可以在空气、水和固体中传播，但不能在真空中传播。",
    "声音在空气中每秒大约传播三百四十米，在钢铁中传播得更快。",
    "月球本身不发光，我们看到的月光是它反射的太阳光。",
    "月球绕地球转动，同时地球绕太阳转动，所以我们看到的月相会变化。",
    "从新月到满月，再从满月到新月，大约需要二十九天半。",
    "地球自转一周是一天，因此产生了昼夜交替。",
    "地球绕太阳公转一周是一年，地轴倾斜使地球上有了四季。",
    "细胞是生物体结构和功能的基本单位，大多数细胞要用显微镜才能看到。",
    "植物细胞有细胞壁和叶绿体，而动物细胞没有。",
    "细胞核里有遗传物质，它控制着细胞的生长和分裂。",
    "一个细胞分裂成两个细胞，生物体就是这样一点点长大的。",
    "食物在消化道里被分解成小分子，才能被小肠吸收进入血液。",
    "心脏像一个水泵，不停地把血液送到全身各处。",
    "血液把氧气和养料运到细胞，又把二氧化碳和废物运走。",
    "科学家做实验时要控制变量，一次只改变一个条件。",
    "实验要重复几次，记录数据，再根据数据得出结论。",
    "如果实验结果和猜想不一样，就要认真分析原因，而不是随意修改数据。",
    "科学知识是在不断的观察、实验和讨论中发展起来的。",
)

_QUESTIONS = (
    "请用自己的话解释一下课文里说的光合作用是什么？",
    "为什么说光合作用是几乎所有食物的来源？",
    "白天和夜晚，植物分别在进行哪些作用？",
    "课文里说的水循环有哪几个步骤？",
    "森林为什么能保护水资源？",
    "汽车刹车时乘客为什么会向前倾？",
    "为什么在冰面上走路容易滑倒？",
    "声音为什么不能在真空中传播？",
    "我们看到的月光是从哪里来的？",
    "为什么地球上会有四季？",
    "植物细胞和动物细胞有什么不同？",
    "血液在身体里起什么作用？",
    "做实验时为什么要控制变量？",
    "实验结果和猜想不一样时应该怎么办？",
    "呼吸作用和光合作用有什么区别？",
    "云是怎么形成的？",
    "惯性是什么意思？能举个例子吗？",
    "细胞核有什么作用？",
    "小肠在消化中起什么作用？",
    "温度怎样影响光合作用？",
)

_FOLLOW_UPS = (
    "能再举一个生活中的例子吗？",
    "我还是不太明白，能说得更简单一点吗？",
    "这和课文里的哪一句话有关？",
    "如果条件反过来，会发生什么？",
    "能用三点总结一下吗？",
    "老师，我这样理解对吗：就是能量从一种形式变成另一种形式？",
    "这个知识在考试里一般怎么考？",
    "有没有什么小实验可以在家里验证？",
)


def lesson_text(chars: int, seed: int) -> str:
    """A Chinese lesson of about ``chars`` characters; the same ``seed`` gives the same text."""
    rng = random.Random(seed)
    parts = [f"第{rng.randrange(1, 100)}课 自然与生活（{rng.randrange(10**5, 10**6)}）\n"]
    size = len(parts[0])
    while size < chars:
        sentence = rng.choice(_SENTENCES)
        parts.append(sentence)
        size += len(sentence)
    return "".join(parts)[: max(chars, 1)]


def question(student: int, turn: int) -> str:
    """Student ``student``'s question at ``turn`` (0: the first; later: a follow-up)."""
    if turn == 0:
        asked = _QUESTIONS[student % len(_QUESTIONS)]
        return f"我是{student + 1}号同学。{asked}"
    return _FOLLOW_UPS[(student * 3 + turn) % len(_FOLLOW_UPS)]
