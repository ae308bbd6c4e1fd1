"""The hand-written content of the crag-mm-mini benchmark: pictures, conversations, image KG, web pages.

Conventions:
- `PICTURES[key]` says which picture a session shows (`source` from minibench.images.SOURCES,
  an optional degradation), its https URL (None = egocentric, like the real dataset) and its
  image_quality label.
- A turn is (domain, query_category, dynamism, query, answer, where), `where` naming the
  source that holds the answer: "image" (visible in the picture), "kg" (image-search KG),
  "web" (web-search pages) or "none" (no source we ship holds it). `ANSWER_KEYS` says, for
  each KG / web question, which short strings show that a text holds its answer.
- The image KG and the web pages follow the official record shapes: infobox fields in wiki
  markup with layout fields, and snippets with HTML entities and repeated runs.
- Domains and categories follow CRAG-MM's published taxonomy (13 domains; simple recognition,
  simple knowledge, multi-hop, comparison, aggregation, reasoning).
"""
from __future__ import annotations

import html
import re
from dataclasses import dataclass

URL = "https://images.crag-mm-mini.example/"  # .example is reserved: these URLs never resolve

PICTURES: dict[str, dict] = {
    "coffee": dict(source="coffee", url=None, quality="normal"),
    "chelsea": dict(source="chelsea", url=None, quality="normal"),
    "astronaut": dict(source="astronaut", url=URL + "astronaut.jpg", quality="normal"),
    "rocket": dict(source="rocket", url=URL + "rocket-launch.jpg", quality="normal"),
    "motorcycle": dict(source="motorcycle", url=None, quality="normal"),
    "coins": dict(source="coins", url=URL + "pompeii-coins.jpg", quality="normal"),
    "camera": dict(source="camera", url=URL + "cameraman.jpg", quality="normal"),
    "hubble": dict(source="hubble", url=URL + "hubble-xdf.jpg", quality="normal"),
    "moon": dict(source="moon", url=URL + "moon-surface.jpg", quality="normal"),
    "horse": dict(source="horse", url=URL + "horse-silhouette.jpg", quality="normal"),
    "page": dict(source="page", url=None, quality="normal"),
    "clock": dict(source="clock", url=None, quality="blurred"),
    "china": dict(source="china", url=URL + "summer-palace.jpg", quality="normal"),
    "flower": dict(source="flower", url=None, quality="normal"),
    "street_sign": dict(source="street_sign", url=None, quality="normal"),
    "bus_stop": dict(source="bus_stop", url=None, quality="normal"),
    "shelf_labels": dict(source="shelf_labels", transform="rotated", url=None, quality="rotated"),
    "pride_cover": dict(source="pride_cover", url=None, quality="normal"),
    "moby_cover": dict(source="moby_cover", url=URL + "moby-dick-cover.jpg", quality="normal"),
    "whiteboard": dict(source="whiteboard", url=None, quality="normal"),
    "cafe_menu": dict(source="cafe_menu", transform="low light", url=None, quality="low light"),
    "care_label": dict(source="care_label", url=None, quality="normal"),
    "chessboard": dict(source="chessboard", url=URL + "chessboard.jpg", quality="normal"),
    "scoreboard": dict(source="scoreboard", url=None, quality="normal"),
    "seed_packet": dict(source="seed_packet", transform="truncated", url=None, quality="truncated"),
    "parking_sign": dict(source="parking_sign", transform="low light", url=None, quality="low light"),
}

SR, SK, MH, CMP, AGG, RSN = ("simple recognition", "simple knowledge", "multi-hop", "comparison",
                             "aggregation", "reasoning")
STATIC, SLOW, FAST, REAL = "static", "slow-changing", "fast-changing", "real-time"

SINGLE_TURN: list[tuple[str, tuple]] = [
    ("coffee", ("food", SR, STATIC, "what kind of coffee drink is in this cup?", "It is an espresso, served in a small cup on a saucer.", "kg")),
    ("coffee", ("food", SK, STATIC, "how much caffeine is in a single shot of this drink?", "A single 1-ounce shot of espresso has about 63 mg of caffeine.", "web")),
    ("chelsea", ("animal", SR, STATIC, "what animal is this?", "A cat - a tabby cat.", "image")),
    ("chelsea", ("animal", SK, STATIC, "what is the letter-shaped marking on the forehead of cats with this coat pattern?", "Tabby cats have a distinctive 'M' marking on the forehead.", "kg")),
    ("chelsea", ("animal", SK, SLOW, "how many hours a day does an adult cat like this usually sleep?", "Adult cats usually sleep about 12 to 16 hours a day.", "web")),
    ("astronaut", ("other", SR, STATIC, "who is the astronaut in this portrait?", "Eileen Collins, the NASA astronaut.", "kg")),
    ("astronaut", ("other", MH, STATIC, "what observatory did the first shuttle mission commanded by this person deploy?", "STS-93, which she commanded in 1999, deployed the Chandra X-ray Observatory.", "web")),
    ("rocket", ("vehicles", SR, STATIC, "what rocket is this?", "A SpaceX Falcon 9 rocket.", "kg")),
    ("rocket", ("vehicles", MH, STATIC, "which spacecraft did this launch put into space?", "The Deep Space Climate Observatory (DSCOVR), launched on 11 February 2015.", "web")),
    ("rocket", ("vehicles", SK, REAL, "is a falcon 9 launch happening from this pad right now?", "The benchmark has no live launch schedule; the launch in the picture took place on 11 February 2015.", "none")),
    ("motorcycle", ("vehicles", SR, STATIC, "what color is the fuel tank of this motorcycle?", "Red.", "image")),
    ("motorcycle", ("vehicles", SK, SLOW, "what did this motorcycle cost when it was new?", "Its original price is not known from the picture or any source in this benchmark.", "none")),
    ("coins", ("general object recognition", SR, STATIC, "what are these objects?", "Ancient Greek coins found at Pompeii.", "kg")),
    ("coins", ("general object recognition", MH, STATIC, "in what year was the city where these coins were found buried by a volcano?", "Pompeii was buried by the eruption of Mount Vesuvius in AD 79.", "kg")),
    ("coins", ("general object recognition", AGG, STATIC, "how many coins are in the top row?", "There are 6 coins in the top row.", "image")),
    ("camera", ("general object recognition", SR, STATIC, "what is the device mounted on the stand?", "A camera on a tripod.", "image")),
    ("camera", ("general object recognition", AGG, STATIC, "how many legs does the stand have?", "Three - it is a tripod.", "image")),
    ("hubble", ("math & science", SR, STATIC, "what is this image of?", "The Hubble eXtreme Deep Field, a Hubble Space Telescope image of thousands of distant galaxies.", "kg")),
    ("hubble", ("math & science", SK, STATIC, "when was the telescope that took this image launched?", "The Hubble Space Telescope was launched on 24 April 1990 aboard Space Shuttle Discovery (STS-31).", "web")),
    ("moon", ("math & science", SR, STATIC, "which celestial body's surface is shown here?", "The Moon.", "kg")),
    ("moon", ("math & science", SK, STATIC, "what is the average distance from earth to this body?", "About 384,400 km.", "kg")),
    ("horse", ("animal", SR, STATIC, "what animal is shown in this silhouette?", "A horse.", "image")),
    ("horse", ("animal", SK, STATIC, "how long is the pregnancy of this animal?", "About 11 months (roughly 340 days).", "kg")),
    ("page", ("text understanding", SR, STATIC, "what is the heading of this page?", "Region-based segmentation.", "image")),
    ("page", ("text understanding", RSN, STATIC, "according to the text, where are the markers placed in the histogram?", "At the two extreme parts of the histogram of grey values.", "image")),
    ("clock", ("general object recognition", SR, STATIC, "what object is this, even though the photo is blurry?", "A wall clock.", "image")),
    ("china", ("local", SR, STATIC, "what is the name of this building?", "The Tower of Buddhist Incense (Foxiang Ge) in the Summer Palace, Beijing.", "kg")),
    ("china", ("local", SK, STATIC, "in which year was the palace complex containing this tower listed as a unesco world heritage site?", "The Summer Palace was inscribed on the UNESCO World Heritage List in 1998.", "web")),
    ("china", ("local", CMP, STATIC, "which is taller, this tower or the hall of prayer for good harvests at the temple of heaven?", "The Tower of Buddhist Incense (about 41 m) is taller than the Hall of Prayer for Good Harvests (about 38 m).", "kg")),
    ("china", ("local", SK, REAL, "is this place open to visitors at this very moment?", "Opening status right now cannot be known from the benchmark's sources.", "none")),
    ("flower", ("plants & gardening", SR, STATIC, "what flower is this?", "A dahlia.", "kg")),
    ("flower", ("plants & gardening", SK, STATIC, "what should i do with the tubers of this plant before winter in a cold climate?", "Dig up the tubers after the first frost blackens the foliage, dry them and store them in a cool, frost-free place until spring.", "web")),
    ("street_sign", ("local", SR, STATIC, "what streets meet at this corner?", "Elm Street and 5th Avenue.", "image")),
    ("bus_stop", ("local", SR, REAL, "how long until the next bus comes?", "The display says the next bus arrives in 4 minutes.", "image")),
    ("shelf_labels", ("shopping", SR, FAST, "how much is the oat milk?", "The 1 L oat milk costs $3.49.", "image")),
    ("shelf_labels", ("shopping", CMP, FAST, "which of these two milks is cheaper per liter?", "The almond milk: $2.66 per liter against $3.49 per liter for the oat milk.", "image")),
    ("shelf_labels", ("shopping", AGG, FAST, "how much would two cartons of oat milk and one almond milk cost together?", "$10.97 (2 x $3.49 + $3.99).", "image")),
    ("pride_cover", ("book", SR, STATIC, "who wrote this book?", "Jane Austen.", "image")),
    ("pride_cover", ("book", SK, STATIC, "in what year was this novel first published?", "1813.", "kg")),
    ("moby_cover", ("book", SK, STATIC, "what is the name of the ship in this novel?", "The Pequod.", "kg")),
    ("moby_cover", ("book", CMP, STATIC, "was this novel published before or after pride and prejudice, and by how many years?", "After: Moby-Dick (1851) came out 38 years after Pride and Prejudice (1813).", "kg")),
    ("moby_cover", ("book", MH, STATIC, "on which whaling ship did the author of this book sail in 1841?", "Herman Melville sailed on the whaler Acushnet in 1841.", "web")),
    ("whiteboard", ("math & science", RSN, STATIC, "what is the value of x in the equation on the board?", "x = 4.", "image")),
    ("whiteboard", ("math & science", RSN, STATIC, "using the formula on the board, what is the area of a circle of radius 3?", "9\u03c0, about 28.27 square units.", "image")),
    ("cafe_menu", ("food", SR, FAST, "how much is a latte here?", "$4.50.", "image")),
    ("cafe_menu", ("food", AGG, FAST, "what would a cappuccino and a bagel cost together?", "$6.75.", "image")),
    ("care_label", ("style & fashion", SR, STATIC, "what fabric is this garment made of?", "100% cotton.", "image")),
    ("care_label", ("style & fashion", RSN, STATIC, "can i put this shirt in the dryer?", "No - the label says do not tumble dry.", "image")),
    ("care_label", ("style & fashion", SK, STATIC, "why do garments of this fabric shrink in hot water?", "Cotton fibres are stretched during spinning and weaving; heat and agitation relax them, so the fabric contracts.", "web")),
    ("chessboard", ("sports & games", AGG, STATIC, "how many squares does this board have?", "64 (8 x 8).", "image")),
    ("chessboard", ("sports & games", SK, STATIC, "in the game played on this board, which piece may only move diagonally?", "The bishop.", "web")),
    ("scoreboard", ("sports & games", SR, REAL, "what is the score right now?", "Home 3, Away 1.", "image")),
    ("seed_packet", ("plants & gardening", SR, STATIC, "what tomato variety is in this packet?", "San Marzano.", "image")),
    ("seed_packet", ("plants & gardening", RSN, STATIC, "if i sow these seeds today, roughly how many days until the first harvest?", "About 80 days, according to the packet.", "image")),
    ("parking_sign", ("local", RSN, STATIC, "can i park here for three hours on a saturday morning?", "No - parking is limited to 2 hours from 8 am to 6 pm, Monday to Saturday.", "image")),
]

# --- stage labels (CRAG-MM-Diagnostics' metadata) -----------------------------------------
# The object each photo of a single image-KG entity shows: its entity name (the image KG's) and
# Wikipedia page. The object fills the photo, so its box is the whole picture; the composed photos
# below hold two objects, each in a known half.
WIKI = "https://en.wikipedia.org/wiki/"
TARGETS: dict[str, dict] = {
    "coffee": dict(name="Espresso", wiki=WIKI + "Espresso"),
    "chelsea": dict(name="Tabby cat", wiki=WIKI + "Tabby_cat"),
    "astronaut": dict(name="Eileen Collins", wiki=WIKI + "Eileen_Collins"),
    "rocket": dict(name="Falcon 9", wiki=WIKI + "Falcon_9"),
    "coins": dict(name="Greek coins from Pompeii", wiki=WIKI + "Pompeii"),
    "hubble": dict(name="Hubble eXtreme Deep Field", wiki=WIKI + "Hubble_eXtreme_Deep_Field"),
    "moon": dict(name="Moon", wiki=WIKI + "Moon"),
    "horse": dict(name="Horse", wiki=WIKI + "Horse"),
    "china": dict(name="Tower of Buddhist Incense", wiki=WIKI + "Tower_of_Buddhist_Incense"),
    "flower": dict(name="Dahlia", wiki=WIKI + "Dahlia"),
    "pride_cover": dict(name="Pride and Prejudice", wiki=WIKI + "Pride_and_Prejudice"),
    "moby_cover": dict(name="Moby-Dick", wiki=WIKI + "Moby-Dick"),
}

# How a question refers to its target (CRAG-MM-Diagnostics' referring_expression_category; the
# dataset's own values are not listed in its code, save "not enough cue (ambiguous)").
ONLY_OBJECT = "the only object in the photo"
CLASS_NAMED = "object class named"
SPATIAL = "spatial cue"
AMBIGUOUS = "not enough cue (ambiguous)"

# Each labelled question with its target written in (textual_only_question).
TEXT_ONLY: dict[str, str] = {
    "what kind of coffee drink is in this cup?": "what kind of coffee drink is an espresso?",
    "how much caffeine is in a single shot of this drink?": "how much caffeine is in a single shot of espresso?",
    "what animal is this?": "what animal is a tabby cat?",
    "what is the letter-shaped marking on the forehead of cats with this coat pattern?":
        "what is the letter-shaped marking on the forehead of tabby cats?",
    "how many hours a day does an adult cat like this usually sleep?":
        "how many hours a day does an adult tabby cat usually sleep?",
    "who is the astronaut in this portrait?": "who is the astronaut Eileen Collins?",
    "what observatory did the first shuttle mission commanded by this person deploy?":
        "what observatory did the first shuttle mission commanded by Eileen Collins deploy?",
    "what rocket is this?": "what rocket is the Falcon 9?",
    "which spacecraft did this launch put into space?": "which spacecraft did the Falcon 9 launch of February 2015 put into space?",
    "is a falcon 9 launch happening from this pad right now?": "is a Falcon 9 launch happening right now?",
    "what are these objects?": "what are the Greek coins from Pompeii?",
    "in what year was the city where these coins were found buried by a volcano?":
        "in what year was Pompeii, where the Greek coins were found, buried by a volcano?",
    "how many coins are in the top row?": "how many Greek coins from Pompeii are in the top row of the photo?",
    "what is this image of?": "what is the Hubble eXtreme Deep Field?",
    "when was the telescope that took this image launched?":
        "when was the telescope that took the Hubble eXtreme Deep Field launched?",
    "which celestial body's surface is shown here?": "which celestial body's surface is the Moon's?",
    "what is the average distance from earth to this body?": "what is the average distance from earth to the Moon?",
    "what animal is shown in this silhouette?": "what animal is a horse?",
    "how long is the pregnancy of this animal?": "how long is the pregnancy of a horse?",
    "what is the name of this building?": "what is the name of the Tower of Buddhist Incense?",
    "in which year was the palace complex containing this tower listed as a unesco world heritage site?":
        "in which year was the palace complex containing the Tower of Buddhist Incense listed as a unesco world heritage site?",
    "which is taller, this tower or the hall of prayer for good harvests at the temple of heaven?":
        "which is taller, the Tower of Buddhist Incense or the hall of prayer for good harvests at the temple of heaven?",
    "is this place open to visitors at this very moment?": "is the Tower of Buddhist Incense open to visitors at this very moment?",
    "what flower is this?": "what flower is a dahlia?",
    "what should i do with the tubers of this plant before winter in a cold climate?":
        "what should i do with the tubers of a dahlia before winter in a cold climate?",
    "who wrote this book?": "who wrote Pride and Prejudice?",
    "in what year was this novel first published?": "in what year was Pride and Prejudice first published?",
    "what is the name of the ship in this novel?": "what is the name of the ship in Moby-Dick?",
    "was this novel published before or after pride and prejudice, and by how many years?":
        "was Moby-Dick published before or after pride and prejudice, and by how many years?",
    "on which whaling ship did the author of this book sail in 1841?":
        "on which whaling ship did the author of Moby-Dick sail in 1841?",
}

# Photos of two objects side by side (left, right): (the two pictures, which one the question is
# about, a single-turn question about it whose answer and answer forms are that question's, the
# referring category, the question made unambiguous).
COMPOSED: list[tuple[tuple[str, str], str, str, str, str]] = [
    (("coffee", "chelsea"), "chelsea",
     "what is the letter-shaped marking on the forehead of cats with this coat pattern?", CLASS_NAMED,
     "what is the letter-shaped marking on the forehead of cats with this coat pattern?"),
    (("rocket", "moon"), "rocket", "which spacecraft did this launch put into space?", AMBIGUOUS,
     "which spacecraft did the launch on the left put into space?"),
    (("flower", "horse"), "horse", "how long is the pregnancy of this animal?", CLASS_NAMED,
     "how long is the pregnancy of this animal?"),
]


def stage_metadata(picture: str, query: str, box: list[float], size: tuple[int, int],
                   category: str = ONLY_OBJECT, disambiguated: str | None = None) -> dict:
    """One labelled question's metadata, in CRAG-MM-Diagnostics' field names."""
    target = TARGETS[picture]
    return dict(target_roi_bbox=[float(v) for v in box], image_size=list(size), target_object_name=target["name"],
                wikipedia_url=target["wiki"], referring_expression_category=category,
                disambiguated_question=disambiguated or query, textual_only_question=TEXT_ONLY[query])


# Multi-turn conversations: all turns share one picture; later turns lean on earlier ones.
MULTI_TURN: list[tuple[str, list[tuple]]] = [
    ("astronaut", [
        ("other", SR, STATIC, "who is this?", "Eileen Collins, a NASA astronaut.", "kg"),
        ("other", SK, STATIC, "which shuttle mission did she first command?", "STS-93, in July 1999.", "kg"),
        ("other", MH, STATIC, "what did that mission deploy?", "The Chandra X-ray Observatory.", "web"),
        ("other", SK, STATIC, "when did she retire from nasa?", "In 2006.", "kg"),
    ]),
    ("china", [
        ("local", SR, STATIC, "what is this tower?", "The Tower of Buddhist Incense in Beijing's Summer Palace.", "kg"),
        ("local", SK, STATIC, "how tall is it?", "About 41 metres.", "kg"),
        ("local", SK, STATIC, "what is the lake at the foot of the hill called?", "Kunming Lake.", "kg"),
        ("local", SK, STATIC, "when did the whole palace become a world heritage site?", "In 1998.", "web"),
    ]),
    ("coffee", [
        ("food", SR, STATIC, "what's this drink?", "An espresso.", "kg"),
        ("food", SK, STATIC, "which country does it come from?", "Italy.", "kg"),
        ("food", SK, STATIC, "about how much caffeine does one shot have?", "About 63 mg.", "web"),
    ]),
    ("pride_cover", [
        ("book", SR, STATIC, "what book is this?", "Pride and Prejudice by Jane Austen.", "image"),
        ("book", SK, STATIC, "when was it published?", "In 1813.", "kg"),
        ("book", RSN, STATIC, "how old was the author then?", "Jane Austen was born in December 1775, so she was 37.", "kg"),
        ("book", SK, STATIC, "who is the heroine?", "Elizabeth Bennet.", "kg"),
    ]),
    ("cafe_menu", [
        ("food", SR, FAST, "what's the price of a latte?", "$4.50.", "image"),
        ("food", AGG, FAST, "and a latte plus a croissant?", "$7.75.", "image"),
        ("food", CMP, FAST, "which drink on the menu is the cheapest?", "The espresso, at $2.75.", "image"),
    ]),
    ("rocket", [
        ("vehicles", SR, STATIC, "what rocket is on the pad?", "A SpaceX Falcon 9.", "kg"),
        ("vehicles", MH, STATIC, "what was it carrying on this launch?", "NOAA's Deep Space Climate Observatory (DSCOVR).", "web"),
        ("vehicles", SK, STATIC, "where does that spacecraft sit in space?", "At the Sun-Earth Lagrange point L1, about 1.5 million km from Earth.", "web"),
        ("vehicles", SK, REAL, "is the next falcon 9 launch today?", "The benchmark has no live launch schedule.", "none"),
    ]),
    ("flower", [
        ("plants & gardening", SR, STATIC, "what flower is this?", "A dahlia.", "kg"),
        ("plants & gardening", SK, STATIC, "it's the national flower of which country?", "Mexico.", "kg"),
        ("plants & gardening", SK, STATIC, "how do i keep it through the winter?", "Lift the tubers after the first frost, dry them, and store them cool and frost-free until spring.", "web"),
    ]),
    ("bus_stop", [
        ("local", SR, STATIC, "which bus route stops here?", "Route 42, to Downtown via Main St.", "image"),
        ("local", SR, SLOW, "how often does it run?", "Every 15 minutes, from 6:00 am to 11:00 pm.", "image"),
        ("local", SR, REAL, "when is the next one?", "In 4 minutes, according to the display.", "image"),
    ]),
    ("whiteboard", [
        ("math & science", RSN, STATIC, "solve the equation on the board.", "x = 4.", "image"),
        ("math & science", RSN, STATIC, "what is 3x then?", "12.", "image"),
    ]),
    ("chelsea", [
        ("animal", SR, STATIC, "what animal is this?", "A cat (a tabby).", "image"),
        ("animal", SK, STATIC, "what is the name for its striped coat pattern?", "Tabby.", "kg"),
        ("animal", SK, SLOW, "how much does a cat like this sleep each day?", "About 12 to 16 hours.", "web"),
    ]),
    ("hubble", [
        ("math & science", SR, STATIC, "what am i looking at?", "The Hubble eXtreme Deep Field.", "kg"),
        ("math & science", SK, STATIC, "about how many galaxies are in it?", "About 5,500 galaxies.", "kg"),
        ("math & science", SK, STATIC, "when was the telescope launched?", "On 24 April 1990.", "web"),
        ("math & science", CMP, STATIC, "does it show more galaxies than the 2004 ultra deep field?", "No - the 2004 Ultra Deep Field shows about 10,000 galaxies, more than the eXtreme Deep Field's 5,500, which covers a smaller part of it.", "kg"),
    ]),
    ("moby_cover", [
        ("book", SR, STATIC, "who wrote this novel?", "Herman Melville.", "image"),
        ("book", SK, STATIC, "where was he born?", "In New York City, on 1 August 1819.", "web"),
        ("book", SK, STATIC, "what was his first book called?", "Typee, published in 1846.", "web"),
        ("book", SK, STATIC, "who narrates the story on this cover?", "Ishmael.", "kg"),
    ]),
    ("coins", [
        ("general object recognition", SR, STATIC, "what are these old coins?", "Ancient Greek coins found at Pompeii.", "kg"),
        ("general object recognition", MH, STATIC, "which volcano buried the town they were found in?", "Mount Vesuvius, in AD 79.", "kg"),
        ("general object recognition", SK, STATIC, "when did excavations there begin?", "In 1748.", "kg"),
        ("general object recognition", SK, STATIC, "which museum holds them now?", "The Brooklyn Museum in New York City.", "kg"),
        ("general object recognition", SK, SLOW, "how high is that volcano today?", "About 1,281 metres.", "web"),
    ]),
    ("moon", [
        ("math & science", SR, STATIC, "what is this a picture of?", "The cratered surface of the Moon.", "kg"),
        ("math & science", SK, STATIC, "how long does it take to go once around the earth?", "About 27.3 days (one sidereal month).", "kg"),
        ("math & science", SK, STATIC, "who were the first people to walk on it?", "Neil Armstrong and Buzz Aldrin, on Apollo 11 in July 1969.", "web"),
        ("math & science", SK, STATIC, "which rocket launched that mission?", "A Saturn V.", "web"),
        ("math & science", SK, STATIC, "who stayed in lunar orbit while they walked?", "Michael Collins, in the command module Columbia.", "web"),
    ]),
    ("horse", [
        ("animal", SR, STATIC, "whose silhouette is this?", "A horse.", "image"),
        ("animal", SK, STATIC, "what is a young one called?", "A foal.", "kg"),
        ("animal", SK, STATIC, "when were they first domesticated?", "About 5,500 years ago, on the Eurasian steppe.", "kg"),
        ("animal", SK, STATIC, "how fast is that animal at a full gallop?", "Typically 40 to 48 km/h; the fastest racehorses reach about 70 km/h over short distances.", "web"),
    ]),
    ("camera", [
        ("general object recognition", SR, STATIC, "what is the man in the photo working with?", "A camera on a tripod.", "image"),
        ("general object recognition", AGG, STATIC, "how many legs does its stand have?", "Three.", "image"),
        ("general object recognition", SK, STATIC, "in what year was this photo taken?", "No source in the benchmark says when the photo was taken.", "none"),
    ]),
    ("clock", [
        ("general object recognition", SR, STATIC, "what's this round thing on the wall?", "A wall clock.", "image"),
        ("general object recognition", RSN, STATIC, "why does it look smeared?", "The photo is motion-blurred: the camera or the clock moved during the exposure.", "image"),
    ]),
    ("street_sign", [
        ("local", SR, STATIC, "which two streets cross here?", "Elm Street and 5th Avenue.", "image"),
        ("local", AGG, STATIC, "how many street name plates are on the pole?", "Two.", "image"),
    ]),
    ("shelf_labels", [
        ("shopping", SR, FAST, "what does the oat milk cost per liter?", "$3.49 per liter.", "image"),
        ("shopping", SR, FAST, "and how big is the almond milk carton?", "1.5 liters.", "image"),
        ("shopping", AGG, FAST, "how much would three of those cost?", "$11.97 (3 x $3.99).", "image"),
        ("shopping", SK, STATIC, "what is that drink made from?", "Almonds ground with water and strained.", "web"),
    ]),
    ("scoreboard", [
        ("sports & games", SR, REAL, "who is winning?", "The home team, 3 to 1.", "image"),
        ("sports & games", AGG, REAL, "by how many goals?", "By two (3-1).", "image"),
        ("sports & games", SR, REAL, "which period is being played?", "The second period, with 12:41 on the clock.", "image"),
        ("sports & games", RSN, REAL, "will they still be ahead at the final whistle?", "The benchmark cannot know how the game ends.", "none"),
    ]),
    ("seed_packet", [
        ("plants & gardening", SR, STATIC, "which variety of tomato are these seeds?", "San Marzano.", "image"),
        ("plants & gardening", SR, STATIC, "when should i start them indoors?", "6 to 8 weeks before the last frost.", "image"),
        ("plants & gardening", SK, STATIC, "what is that kind of tomato mostly used for?", "Sauces: it is a plum tomato with thick flesh and few seeds, prized for cooking and canning.", "web"),
        ("plants & gardening", SK, STATIC, "which region of italy does it come from?", "Campania, from around San Marzano sul Sarno near Naples.", "web"),
    ]),
    ("parking_sign", [
        ("local", SR, STATIC, "how long can i park here?", "Up to 2 hours.", "image"),
        ("local", RSN, STATIC, "does that limit apply on sundays?", "No - the sign limits parking from Monday to Saturday only.", "image"),
        ("local", RSN, STATIC, "what about at 7 pm on a weekday?", "No limit then: it applies from 8 am to 6 pm.", "image"),
    ]),
    ("care_label", [
        ("style & fashion", SR, STATIC, "what size is this shirt?", "Medium (M).", "image"),
        ("style & fashion", SR, STATIC, "where was it made?", "In Portugal.", "image"),
        ("style & fashion", SK, STATIC, "what is the capital of that country?", "Lisbon.", "web"),
        ("style & fashion", RSN, STATIC, "at what temperature should i wash the shirt?", "Cold, at 30 \u00b0C at most.", "image"),
    ]),
    ("chessboard", [
        ("sports & games", SR, STATIC, "what game is this board for?", "Chess: it is an 8 x 8 chessboard.", "image"),
        ("sports & games", SK, STATIC, "how does the knight move in it?", "In an L shape, two squares one way and one to the side, jumping over other pieces.", "web"),
        ("sports & games", SK, STATIC, "who was world champion of that game from 1985 to 2000?", "Garry Kasparov.", "web"),
        ("sports & games", SK, STATIC, "which computer beat him in 1997?", "IBM's Deep Blue.", "web"),
    ]),
    ("motorcycle", [
        ("vehicles", SR, STATIC, "what vehicle is this?", "A motorcycle.", "image"),
        ("vehicles", SR, STATIC, "what colour is its tank?", "Red.", "image"),
        ("vehicles", SK, REAL, "is one like it for sale near me today?", "The benchmark has no live sales listings.", "none"),
    ]),
    ("astronaut", [
        ("other", SR, STATIC, "what is the name of the astronaut in this photo?", "Eileen Collins.", "kg"),
        ("other", SK, STATIC, "where was she born?", "In Elmira, New York.", "kg"),
        ("other", MH, STATIC, "which mission did she command after the columbia accident?", "STS-114, the Return to Flight mission of 2005.", "kg"),
        ("other", SK, STATIC, "which orbiter flew that mission?", "Space Shuttle Discovery.", "web"),
        ("other", SK, STATIC, "how long did that flight last?", "About 13 days and 21 hours (26 July to 9 August 2005).", "web"),
    ]),
    ("rocket", [
        ("vehicles", SR, STATIC, "which company builds this rocket?", "SpaceX: it is a Falcon 9.", "kg"),
        ("vehicles", SK, STATIC, "what is its height in metres?", "About 70 m.", "kg"),
        ("vehicles", SK, STATIC, "who founded that company?", "Elon Musk, in 2002.", "web"),
        ("vehicles", SK, STATIC, "what was the first rocket it put into orbit?", "Falcon 1, on 28 September 2008.", "web"),
    ]),
    ("hubble", [
        ("math & science", SR, STATIC, "which telescope took this picture?", "The Hubble Space Telescope.", "kg"),
        ("math & science", SK, STATIC, "how wide is its main mirror?", "2.4 metres.", "web"),
        ("math & science", SK, STATIC, "which telescope launched in 2021 is meant to succeed it?", "The James Webb Space Telescope.", "web"),
        ("math & science", SK, STATIC, "what rocket carried that one into space?", "An Ariane 5, from Kourou in French Guiana.", "web"),
        ("math & science", SK, STATIC, "in which constellation is the patch of sky in this image?", "Fornax.", "kg"),
    ]),
    ("china", [
        ("local", SR, STATIC, "which palace is this tower part of?", "The Summer Palace in Beijing.", "kg"),
        ("local", SK, STATIC, "which emperor first built the garden?", "The Qianlong Emperor, in 1750.", "kg"),
        ("local", SK, STATIC, "who had it rebuilt in the 1880s?", "Empress Dowager Cixi.", "kg"),
        ("local", SK, STATIC, "how long is the covered walkway along the lake there?", "The Long Corridor is about 728 metres long.", "web"),
        ("local", SK, SLOW, "which subway line goes there?", "Beijing Subway Line 4 (Beigongmen station).", "kg"),
    ]),
    ("pride_cover", [
        ("book", SR, STATIC, "who is the author of this book?", "Jane Austen.", "image"),
        ("book", SK, STATIC, "which novel did she publish just before this one?", "Sense and Sensibility, in 1811.", "kg"),
        ("book", SK, STATIC, "where did she die?", "In Winchester, on 18 July 1817.", "kg"),
    ]),
]



# --- follow-up referents ------------------------------------------------------------------
# What each follow-up turn (every MULTI_TURN turn after the first; keyed by its query, unique
# in the split) refers to without naming it, and where a reader of the conversation finds the
# name. Measures of conversational search read it from provenance.json ("does the search query
# name the referent?"); it is not part of the CRAG-MM schema.

@dataclass(frozen=True)
class Referent:
    names: tuple[str, ...]  # any one of these (case-blind, whole words) names the referent
    source: str  # "question" | "answer": named first by that earlier turn (its gold answer);
    #              "photo": only the picture shows it; "self": the turn names its own subject
    turn: int | None = None  # the earlier turn that names it ("question" / "answer")
    photo_entity: bool = False  # it is (or is named in) the picture's own KG entity: image search supplies it
    about_photo: bool = True  # False: the turn's subject is no longer what the picture shows


def _answer(*names: str, turn: int = 0, photo_entity: bool = False, about_photo: bool = True) -> Referent:
    return Referent(names, "answer", turn, photo_entity, about_photo)


def _question(*names: str, turn: int = 0, about_photo: bool = True) -> Referent:
    return Referent(names, "question", turn, False, about_photo)


def _photo(*names: str, photo_entity: bool = False) -> Referent:
    return Referent(names, "photo", None, photo_entity, True)


def _self(*names: str, photo_entity: bool = False, about_photo: bool = True) -> Referent:
    return Referent(names, "self", None, photo_entity, about_photo)


COLLINS, AUSTEN, MELVILLE = ("Eileen Collins", "Collins"), ("Jane Austen", "Austen"), ("Herman Melville", "Melville")
XDF = ("eXtreme Deep Field", "XDF")
REFERENTS: dict[str, Referent] = {
    # astronaut
    "which shuttle mission did she first command?": _answer(*COLLINS, photo_entity=True),
    "what did that mission deploy?": _answer("STS-93", turn=1, about_photo=False),
    "when did she retire from nasa?": _answer(*COLLINS, photo_entity=True),
    # china
    "how tall is it?": _answer("Tower of Buddhist Incense", "Foxiang Ge", photo_entity=True),
    "what is the lake at the foot of the hill called?": _answer("Summer Palace", "Tower of Buddhist Incense", "Longevity Hill", photo_entity=True),
    "when did the whole palace become a world heritage site?": _answer("Summer Palace", photo_entity=True),
    # coffee
    "which country does it come from?": _answer("espresso", photo_entity=True),
    "about how much caffeine does one shot have?": _answer("espresso", photo_entity=True),
    # pride_cover
    "when was it published?": _answer("Pride and Prejudice", photo_entity=True),
    "how old was the author then?": _answer(*AUSTEN, about_photo=False),
    "who is the heroine?": _answer("Pride and Prejudice", photo_entity=True),
    # cafe_menu
    "and a latte plus a croissant?": _photo("Cafe Luna"),
    "which drink on the menu is the cheapest?": _photo("Cafe Luna"),
    # rocket
    "what was it carrying on this launch?": _answer("Falcon 9", photo_entity=True),
    "where does that spacecraft sit in space?": _answer("DSCOVR", "Deep Space Climate Observatory", turn=1, about_photo=False),
    "is the next falcon 9 launch today?": _self("Falcon 9", photo_entity=True, about_photo=False),
    # flower
    "it's the national flower of which country?": _answer("dahlia", photo_entity=True),
    "how do i keep it through the winter?": _answer("dahlia", photo_entity=True),
    # bus_stop
    "how often does it run?": _answer("Route 42"),
    "when is the next one?": _answer("Route 42"),
    # whiteboard
    "what is 3x then?": _photo("2x + 6 = 14"),
    # chelsea
    "what is the name for its striped coat pattern?": _answer("cat", photo_entity=True),
    "how much does a cat like this sleep each day?": _self("cat", photo_entity=True),
    # hubble
    "about how many galaxies are in it?": _answer(*XDF, photo_entity=True),
    "when was the telescope launched?": _answer("Hubble", photo_entity=True, about_photo=False),
    "does it show more galaxies than the 2004 ultra deep field?": _answer(*XDF, photo_entity=True),
    # moby_cover
    "where was he born?": _answer(*MELVILLE, about_photo=False),
    "what was his first book called?": _answer(*MELVILLE, about_photo=False),
    "who narrates the story on this cover?": _photo("Moby-Dick", photo_entity=True),
    # coins
    "which volcano buried the town they were found in?": _answer("Pompeii", photo_entity=True, about_photo=False),
    "when did excavations there begin?": _answer("Pompeii", photo_entity=True, about_photo=False),
    "which museum holds them now?": _answer("Greek coins", "coins", photo_entity=True),
    "how high is that volcano today?": _answer("Vesuvius", turn=1, about_photo=False),
    # moon
    "how long does it take to go once around the earth?": _answer("Moon", photo_entity=True),
    "who were the first people to walk on it?": _answer("Moon", photo_entity=True),
    "which rocket launched that mission?": _answer("Apollo 11", turn=2, about_photo=False),
    "who stayed in lunar orbit while they walked?": _answer("Apollo 11", "Armstrong", "Aldrin", turn=2, about_photo=False),
    # horse
    "what is a young one called?": _answer("horse", photo_entity=True),
    "when were they first domesticated?": _answer("horse", photo_entity=True),
    "how fast is that animal at a full gallop?": _answer("horse", photo_entity=True),
    # camera
    "how many legs does its stand have?": _answer("camera"),
    "in what year was this photo taken?": _photo(),
    # clock
    "why does it look smeared?": _answer("clock"),
    # street_sign
    "how many street name plates are on the pole?": _photo(),
    # shelf_labels
    "and how big is the almond milk carton?": _self("almond milk"),
    "how much would three of those cost?": _question("almond milk", turn=1),
    "what is that drink made from?": _question("almond milk", turn=1, about_photo=False),
    # scoreboard
    "by how many goals?": _answer("home"),
    "which period is being played?": _photo(),
    "will they still be ahead at the final whistle?": _answer("home"),
    # seed_packet
    "when should i start them indoors?": _answer("San Marzano"),
    "what is that kind of tomato mostly used for?": _answer("San Marzano", about_photo=False),
    "which region of italy does it come from?": _answer("San Marzano", about_photo=False),
    # parking_sign
    "does that limit apply on sundays?": _answer("2 hours"),
    "what about at 7 pm on a weekday?": _answer("2 hours"),
    # care_label
    "where was it made?": _question("shirt"),
    "what is the capital of that country?": _answer("Portugal", turn=1, about_photo=False),
    "at what temperature should i wash the shirt?": _self("shirt"),
    # chessboard
    "how does the knight move in it?": _answer("chess", about_photo=False),
    "who was world champion of that game from 1985 to 2000?": _answer("chess", about_photo=False),
    "which computer beat him in 1997?": _answer("Kasparov", turn=2, about_photo=False),
    # motorcycle
    "what colour is its tank?": _answer("motorcycle"),
    "is one like it for sale near me today?": _answer("motorcycle"),
    # astronaut, second conversation
    "where was she born?": _answer(*COLLINS, photo_entity=True),
    "which mission did she command after the columbia accident?": _answer(*COLLINS, photo_entity=True),
    "which orbiter flew that mission?": _answer("STS-114", turn=2, about_photo=False),
    "how long did that flight last?": _answer("STS-114", turn=2, about_photo=False),
    # rocket, second conversation
    "what is its height in metres?": _answer("Falcon 9", photo_entity=True),
    "who founded that company?": _answer("SpaceX", about_photo=False),
    "what was the first rocket it put into orbit?": _answer("SpaceX", about_photo=False),
    # hubble, second conversation
    "how wide is its main mirror?": _answer("Hubble", photo_entity=True, about_photo=False),
    "which telescope launched in 2021 is meant to succeed it?": _answer("Hubble", photo_entity=True, about_photo=False),
    "what rocket carried that one into space?": _answer("James Webb", "JWST", turn=2, about_photo=False),
    "in which constellation is the patch of sky in this image?": _photo(*XDF, photo_entity=True),
    # china, second conversation
    "which emperor first built the garden?": _answer("Summer Palace", photo_entity=True),
    "who had it rebuilt in the 1880s?": _answer("Summer Palace", photo_entity=True),
    "how long is the covered walkway along the lake there?": _answer("Summer Palace", photo_entity=True, about_photo=False),
    "which subway line goes there?": _answer("Summer Palace", photo_entity=True, about_photo=False),
    # pride_cover, second conversation
    "which novel did she publish just before this one?": _answer(*AUSTEN, "Pride and Prejudice", photo_entity=True),
    "where did she die?": _answer(*AUSTEN, about_photo=False),
}


def referent_note(query: str) -> dict:
    """A follow-up's referent as provenance.json writes it."""
    r = REFERENTS[query]
    return {"names": list(r.names), "source": r.source, "turn": r.turn,
            "photo_entity": r.photo_entity, "about_photo": r.about_photo}

# --- answer keys ----------------------------------------------------------------------------
# For every KG- or web-answerable question: short strings that all occur in any context that
# holds its gold answer ("a|b": either). The evaluator's answer recall at K_rerank
# (evaluator/scoring/coverage.py) and the provenance tests use them; provenance.json carries them.
ANSWER_KEYS: dict[str, list[str]] = {
 "what kind of coffee drink is in this cup?": ["espresso"],
 "how much caffeine is in a single shot of this drink?": ["63 mg|63 milligrams"],
 "what is the letter-shaped marking on the forehead of cats with this coat pattern?": ['"M"'],
 "how many hours a day does an adult cat like this usually sleep?": ["12 to 16"],
 "who is the astronaut in this portrait?": ["Eileen Collins"],
 "what observatory did the first shuttle mission commanded by this person deploy?": ["Chandra"],
 "what rocket is this?": ["Falcon 9"],
 "which spacecraft did this launch put into space?": ["DSCOVR|Deep Space Climate Observatory"],
 "what are these objects?": ["coins"],
 "in what year was the city where these coins were found buried by a volcano?": ["79"],
 "what is this image of?": ["eXtreme Deep Field"],
 "when was the telescope that took this image launched?": ["1990"],
 "which celestial body's surface is shown here?": ["Moon"],
 "what is the average distance from earth to this body?": ["384,400"],
 "how long is the pregnancy of this animal?": ["11 months"],
 "what is the name of this building?": ["Tower of Buddhist Incense"],
 "in which year was the palace complex containing this tower listed as a unesco world heritage site?": ["1998"],
 "which is taller, this tower or the hall of prayer for good harvests at the temple of heaven?": ["41 m", "38 m"],
 "what flower is this?": ["dahlia"],
 "what should i do with the tubers of this plant before winter in a cold climate?": ["first frost"],
 "in what year was this novel first published?": ["1813"],
 "what is the name of the ship in this novel?": ["Pequod"],
 "was this novel published before or after pride and prejudice, and by how many years?": ["1851", "1813"],
 "on which whaling ship did the author of this book sail in 1841?": ["Acushnet"],
 "why do garments of this fabric shrink in hot water?": ["relax"],
 "in the game played on this board, which piece may only move diagonally?": ["bishop"],
 # multi-turn
 "who is this?": ["Eileen Collins"],
 "which shuttle mission did she first command?": ["STS-93"],
 "what did that mission deploy?": ["Chandra"],
 "when did she retire from nasa?": ["2006"],
 "what is this tower?": ["Tower of Buddhist Incense"],
 "how tall is it?": ["41 m"],
 "what is the lake at the foot of the hill called?": ["Kunming Lake"],
 "when did the whole palace become a world heritage site?": ["1998"],
 "what's this drink?": ["espresso"],
 "which country does it come from?": ["Italy"],
 "about how much caffeine does one shot have?": ["63 mg|63 milligrams"],
 "when was it published?": ["1813"],
 "how old was the author then?": ["1775"],
 "who is the heroine?": ["Elizabeth Bennet"],
 "what rocket is on the pad?": ["Falcon 9"],
 "what was it carrying on this launch?": ["DSCOVR|Deep Space Climate Observatory"],
 "where does that spacecraft sit in space?": ["L1"],
 "it's the national flower of which country?": ["Mexico"],
 "how do i keep it through the winter?": ["first frost"],
 "what is the name for its striped coat pattern?": ["tabby"],
 "how much does a cat like this sleep each day?": ["12 to 16"],
 "what am i looking at?": ["eXtreme Deep Field"],
 "about how many galaxies are in it?": ["5,500"],
 "when was the telescope launched?": ["1990"],
 "does it show more galaxies than the 2004 ultra deep field?": ["5,500", "10,000"],
 "where was he born?": ["New York City"],
 "what was his first book called?": ["Typee"],
 "who narrates the story on this cover?": ["Ishmael"],
 "what are these old coins?": ["Pompeii"],
 "which volcano buried the town they were found in?": ["Vesuvius"],
 "when did excavations there begin?": ["1748"],
 "which museum holds them now?": ["Brooklyn Museum"],
 "how high is that volcano today?": ["1,281"],
 "what is this a picture of?": ["Moon"],
 "how long does it take to go once around the earth?": ["27.322"],
 "who were the first people to walk on it?": ["Armstrong", "Aldrin"],
 "which rocket launched that mission?": ["Saturn V"],
 "who stayed in lunar orbit while they walked?": ["Michael Collins"],
 "what is a young one called?": ["Foal"],
 "when were they first domesticated?": ["5,500"],
 "how fast is that animal at a full gallop?": ["40 to 48"],
 "what is that drink made from?": ["almonds", "water"],
 "what is that kind of tomato mostly used for?": ["sauce|sauces"],
 "which region of italy does it come from?": ["Campania"],
 "what is the capital of that country?": ["Lisbon"],
 "how does the knight move in it?": ["L shape"],
 "who was world champion of that game from 1985 to 2000?": ["Kasparov"],
 "which computer beat him in 1997?": ["Deep Blue"],
 "what is the name of the astronaut in this photo?": ["Eileen Collins"],
 "where was she born?": ["Elmira"],
 "which mission did she command after the columbia accident?": ["STS-114"],
 "which orbiter flew that mission?": ["Discovery"],
 "how long did that flight last?": ["13 days"],
 "which company builds this rocket?": ["SpaceX"],
 "what is its height in metres?": ["70"],
 "who founded that company?": ["Elon Musk"],
 "what was the first rocket it put into orbit?": ["Falcon 1"],
 "which telescope took this picture?": ["Hubble Space Telescope"],
 "how wide is its main mirror?": ["2.4"],
 "which telescope launched in 2021 is meant to succeed it?": ["James Webb"],
 "what rocket carried that one into space?": ["Ariane 5"],
 "in which constellation is the patch of sky in this image?": ["Fornax"],
 "which palace is this tower part of?": ["Summer Palace"],
 "which emperor first built the garden?": ["Qianlong"],
 "who had it rebuilt in the 1880s?": ["Cixi"],
 "how long is the covered walkway along the lake there?": ["728"],
 "which subway line goes there?": ["Line 4"],
 "which novel did she publish just before this one?": ["Sense and Sensibility"],
 "where did she die?": ["Winchester"],
}

# --- accepted answer forms (the offline lexical judge) -------------------------------------
# What an answer must say to be right, for evaluator/scoring/lexical_judge.py: a list of
# alternatives, any one of which suffices; " & " joins parts that must all occur. Forms are
# compared after the judge's normalisation (case, punctuation, articles, "three" = "3", "5,500" =
# "5500"), as whole words. Image questions have forms here only; a KG / web question uses its
# ANSWER_KEYS ("a|b": either) unless it is listed here, where the key marks the evidence rather
# than the answer (a comparison, a computed age, a "why"). "none" questions have no forms: the
# right reply is "I don't know" (build_benchmark marks them abstain_expected).
ACCEPTED_FORMS: dict[str, list[str]] = {
 # image questions
 "what animal is this?": ["cat"],
 "what color is the fuel tank of this motorcycle?": ["red"],
 "how many coins are in the top row?": ["6"],
 "what is the device mounted on the stand?": ["camera"],
 "how many legs does the stand have?": ["3", "tripod"],
 "what animal is shown in this silhouette?": ["horse"],
 "what is the heading of this page?": ["region-based segmentation", "region based segmentation"],
 "according to the text, where are the markers placed in the histogram?": ["extreme", "extremes"],
 "what object is this, even though the photo is blurry?": ["clock"],
 "what streets meet at this corner?": ["elm & 5th"],
 "how long until the next bus comes?": ["4 minutes", "4 min"],
 "how much is the oat milk?": ["$3.49"],
 "which of these two milks is cheaper per liter?": ["almond"],
 "how much would two cartons of oat milk and one almond milk cost together?": ["$10.97"],
 "who wrote this book?": ["Austen"],
 "what is the value of x in the equation on the board?": ["4"],
 "using the formula on the board, what is the area of a circle of radius 3?": ["9π", "9 pi", "28.27", "28.3"],
 "how much is a latte here?": ["$4.50", "$4.5"],
 "what would a cappuccino and a bagel cost together?": ["$6.75"],
 "what fabric is this garment made of?": ["cotton"],
 "can i put this shirt in the dryer?": ["no", "do not tumble dry", "don't tumble dry"],
 "how many squares does this board have?": ["64"],
 "what is the score right now?": ["home 3", "3-1", "3 to 1"],
 "what tomato variety is in this packet?": ["San Marzano"],
 "if i sow these seeds today, roughly how many days until the first harvest?": ["80"],
 "can i park here for three hours on a saturday morning?": ["no"],
 "what book is this?": ["Pride and Prejudice"],
 "what's the price of a latte?": ["$4.50", "$4.5"],
 "and a latte plus a croissant?": ["$7.75"],
 "which drink on the menu is the cheapest?": ["espresso"],
 "which bus route stops here?": ["42"],
 "how often does it run?": ["15 minutes", "15 min", "quarter of an hour"],
 "when is the next one?": ["4 minutes", "4 min"],
 "solve the equation on the board.": ["4"],
 "what is 3x then?": ["12"],
 # KG / web questions whose ANSWER_KEYS mark the evidence, not the answer
 "what is the letter-shaped marking on the forehead of cats with this coat pattern?": ["M"],
 "how many hours a day does an adult cat like this usually sleep?": ["12 to 16", "12-16"],
 "how much does a cat like this sleep each day?": ["12 to 16", "12-16"],
 "what are these objects?": ["coins", "coin"],
 "how long is the pregnancy of this animal?": ["11 months", "340 days"],
 "which is taller, this tower or the hall of prayer for good harvests at the temple of heaven?": [
     "Tower of Buddhist Incense", "this tower", "tower is taller"],
 "what should i do with the tubers of this plant before winter in a cold climate?": ["dig", "lift"],
 "how do i keep it through the winter?": ["dig", "lift"],
 "was this novel published before or after pride and prejudice, and by how many years?": ["after & 38"],
 "why do garments of this fabric shrink in hot water?": ["relax", "relaxes", "relaxation", "tension"],
 "how old was the author then?": ["37"],
 "how tall is it?": ["41 m", "41 metres", "41 meters"],
 "where does that spacecraft sit in space?": ["L1", "Lagrange point"],
 "does it show more galaxies than the 2004 ultra deep field?": ["no"],
 # the grown multi-turn split: image questions
 "who wrote this novel?": ["Melville"],
 "whose silhouette is this?": ["horse"],
 "what is the man in the photo working with?": ["camera"],
 "how many legs does its stand have?": ["3", "tripod"],
 "what's this round thing on the wall?": ["clock"],
 "why does it look smeared?": ["motion", "moved", "moving", "shake", "shaken"],
 "which two streets cross here?": ["elm & 5th"],
 "how many street name plates are on the pole?": ["2"],
 "what does the oat milk cost per liter?": ["$3.49"],
 "and how big is the almond milk carton?": ["1.5"],
 "how much would three of those cost?": ["$11.97"],
 "who is winning?": ["home"],
 "by how many goals?": ["2"],
 "which period is being played?": ["2nd", "period 2"],
 "which variety of tomato are these seeds?": ["San Marzano"],
 "when should i start them indoors?": ["6 & 8 weeks"],
 "how long can i park here?": ["2 hours"],
 "does that limit apply on sundays?": ["no"],
 "what about at 7 pm on a weekday?": ["no limit", "does not apply", "doesn't apply", "6 pm"],
 "what size is this shirt?": ["M", "medium"],
 "where was it made?": ["Portugal"],
 "at what temperature should i wash the shirt?": ["30"],
 "what game is this board for?": ["chess"],
 "what vehicle is this?": ["motorcycle", "motorbike"],
 "what colour is its tank?": ["red"],
 "who is the author of this book?": ["Austen"],
 # the grown split's KG / web questions whose keys mark the evidence, not the answer
 "what are these old coins?": ["Greek coins", "Pompeii"],
 "what is this a picture of?": ["Moon", "lunar"],
 "how long does it take to go once around the earth?": ["27.3", "27.32", "27.322", "27 days"],
 "who were the first people to walk on it?": ["Armstrong & Aldrin"],
 "how fast is that animal at a full gallop?": ["40 to 48", "40-48", "48 km/h"],
 "what is that drink made from?": ["almonds"],
 "how does the knight move in it?": ["L shape", "L shaped", "L-shape", "two squares & one"],
 "how long did that flight last?": ["13 days", "14 days", "two weeks"],
 "what is its height in metres?": ["70"],
 "how wide is its main mirror?": ["2.4"],
}


def accepted_forms(query: str, source: str) -> list[str]:
    """The accepted answer forms of a turn (see ACCEPTED_FORMS); none for a "none" question."""
    if source == "none":
        return []
    if query in ACCEPTED_FORMS:
        return list(ACCEPTED_FORMS[query])
    keys = ANSWER_KEYS.get(query)
    if source in ("kg", "web") and keys and len(keys) == 1:
        return keys[0].split("|")
    raise KeyError(f"no accepted answer forms for the {source} question {query!r}")


# --- image KG -----------------------------------------------------------------------------
# Each entry: (picture, entities). A picture is a PICTURES key (the benchmark image itself) or
# (source, transform) for a look-alike copy that serves as a hard negative. Entities map a name
# to its attributes in the official shape (../shared/FORMATS.md): the fields of a Wikipedia
# infobox, values as raw wiki text (links, templates, <br />, <ref>s, HTML entities), with the
# layout fields (image, image_size, alt, mapframe, coordinates) that real infoboxes carry and
# no description / summary. An entity that occurs under several images carries the same
# attributes everywhere (the official KG is keyed by entity name).

_ESPRESSO = dict(
    name="Espresso", image="Tazzina di caffè a Genova.jpg", image_size="250px",
    caption="A cup of espresso with [[crema]] on a saucer",
    alt="Small white cup of dark coffee", type="[[Coffee]] [[drink]]", course="[[Beverage]]",
    country="[[Italy]]", region="[[Turin]], [[Milan]]",
    creator="[[Angelo Moriondo]] (machine, 1884)<br />[[Luigi Bezzera]] and [[Desiderio Pavoni]] (1901&ndash;1906)",
    year_created="{{Start date|1884}}", serving_temperature="Hot",
    main_ingredient="Finely ground [[coffee bean]]s, hot water",
    variations="{{hlist|[[Ristretto]]|[[Lungo]]|[[Doppio]]|[[Caffè macchiato|Macchiato]]}}",
    serving_size="{{convert|30|ml|USfloz|abbr=on}} per single shot",
    brewing_pressure="{{convert|9|bar|psi|abbr|=|on}}", other="Served in a [[demitasse]]",
)
_RISTRETTO = dict(
    name="Ristretto", image="Ristretto coffee.jpg", image_size="220px", alt="A short coffee in a red cup",
    caption="A ristretto in a red cup", type="[[Coffee]] drink", country="[[Italy]]",
    main_ingredient="Finely ground coffee, about half the water of an [[espresso]]",
    serving_size="{{convert|15|-|20|ml|USfloz|abbr=on}}", taste="Sweeter and more concentrated than espresso",
    served="Hot", variations="[[Caffè corto]]",
)
_TABBY = dict(
    name="Tabby cat", image="Cat November 2010-1a.jpg", image_size="220px",
    caption="A tabby with the typical &quot;M&quot; on its forehead", alt="Striped grey cat",
    type="[[Coat (animal)|Coat pattern]] of the [[domestic cat]]",
    species="''[[Felis catus]]''", patterns="{{ubl|Mackerel|Classic (blotched)|Spotted|Ticked}}",
    forehead_marking='A distinctive "M" shape<ref>{{cite book|title=The Cat Fanciers Handbook|year=2004}}</ref>',
    genetics="[[Agouti gene]] (dominant allele ''A'')", breed_status="Not a [[cat breed|breed]]; occurs in many breeds",
    lifespan="12&ndash;18 years", colours="{{hlist|brown|silver|red|cream}}",
)
_ABYSSINIAN = dict(
    name="Abyssinian", image="Gustav chocolate.jpg", image_size="200px", alt="Ruddy short-haired cat",
    caption="A ruddy Abyssinian", country="[[Ethiopia]] (disputed); developed in [[Great Britain]]",
    coat="Short, [[Cat coat genetics#Ticked|ticked]]", colour="{{ubl|Ruddy|Red (sorrel)|Blue|Fawn}}",
    recognition="{{Start date|1896}} ([[Governing Council of the Cat Fancy|GCCF]])",
    weight="{{convert|3|-|5|kg|lb|abbr=on}}", lifespan="9&ndash;15 years",
    note="Each hair has bands of colour, so the coat looks flecked, not striped",
)
_COLLINS = dict(
    name="Eileen Collins", image="Eileen Collins.jpg", image_size="200px",
    caption="Official NASA portrait, 1997", alt="Woman in an orange suit in front of a flag",
    type="[[NASA]] [[Astronaut]]", nationality="American",
    birth_name="Eileen Marie Collins",
    birth_date="{{birth date and age|1956|11|19}}",
    birth_place="[[Elmira, New York]], U.S.",
    occupation="{{hlist|[[Test pilot]]|[[Flight instructor]]}}",
    alma_mater="{{ubl|[[Syracuse University]] ([[Bachelor of Arts|BA]])|[[Stanford University]] ([[Master of Science|MS]])|[[Webster University]] ([[Master of Arts|MA]])}}",
    rank="[[Colonel (United States)|Colonel]], [[United States Air Force|USAF]]",
    selection="[[NASA Astronaut Group 13|NASA Group 13]] (1990)",
    time="38d 8h 10m", missions="{{ubl|[[STS-63]] (pilot)|[[STS-84]] (pilot)|[[STS-93]] (commander)|[[STS-114]] (commander)}}",
    first_command="[[STS-93]], July 1999 &ndash; first woman to command a [[Space Shuttle]]",
    retirement="{{End date|2006|5|1}}",
    insignia="[[File:Sts-93-patch.png|40px]] [[File:STS-114 patch.svg|40px]]",
    awards="{{hlist|[[Distinguished Flying Cross (United States)|Distinguished Flying Cross]]|[[NASA Distinguished Service Medal]]}}",
)
_SHUTTLE_MODEL = dict(
    name="Space Shuttle orbiter model", image="Shuttle desk model.jpg", image_size="180px",
    alt="White model of a winged spacecraft", type="[[Scale model]]", scale="1:200",
    material="[[Resin]]", subject="[[Space Shuttle orbiter]]", use="Desk display in official portraits",
    manufacturer="Various", length="{{convert|19|cm|in|abbr=on}}",
)
_FALCON9 = dict(
    name="Falcon 9", image="Falcon 9 Demo-2 Launch (NHQ202005300044).jpg", image_size="150px",
    caption="A Falcon 9 on the pad at [[Cape Canaveral Space Force Station|Cape Canaveral]]",
    alt="A tall white rocket between towers",
    function="[[Medium-lift launch vehicle|Medium-lift]] orbital launch vehicle",
    manufacturer="[[SpaceX]]", country_origin="United States",
    cost="{{US$|69.75 million|long=no}} (2024)<ref>{{cite web|url=https://www.spacex.com/|title=Capabilities}}</ref>",
    height="{{convert|70|m|ft|abbr|=|on}}", diameter="{{convert|3.7|m|ft|abbr=on}}",
    mass="{{convert|549054|kg|lb|abbr=on}}", stages="2",
    capacities="{{ubl|LEO: {{convert|22800|kg|lb|abbr=on}}|GTO: {{convert|8300|kg|lb|abbr=on}}}}",
    status="Active", sites="{{ubl|[[Cape Canaveral Space Launch Complex 40|SLC-40]]|[[Kennedy Space Center Launch Complex 39A|LC-39A]]|[[Vandenberg Space Launch Complex 4|SLC-4E]]}}",
    first="{{Start date|2010|6|4}}",
    reusable="First stage; first landing {{Start date|2015|12|22}}",
)
_ATLAS = dict(
    name="Atlas V", image="Atlas V 551 launches New Horizons.jpg", image_size="150px",
    caption="An Atlas V on the pad at night", alt="Rocket lit at night",
    function="[[Medium-lift launch vehicle|Medium]] to [[heavy-lift launch vehicle|heavy-lift]] launch vehicle",
    manufacturer="[[United Launch Alliance]]", designer="[[Lockheed Martin]]", country_origin="United States",
    height="{{convert|58.3|m|ft|abbr=on}}", diameter="{{convert|3.81|m|ft|abbr=on}}", stages="2",
    status="Active", first="{{Start date|2002|8|21}}", sites="{{ubl|[[Cape Canaveral Space Launch Complex 41|SLC-41]]|[[Vandenberg Space Launch Complex 3|SLC-3E]]}}",
    reusable="No ([[expendable launch system|expendable]])",
)
_GREEK_COINS = dict(
    name="Greek coins from Pompeii", image="Brooklyn Museum coins.jpg", image_size="250px",
    caption="Ancient coins photographed for the [[Brooklyn Museum]]", alt="Rows of coins on grey",
    type="[[Ancient Greek coinage|Ancient Greek coins]]", material="{{hlist|[[Silver]]|[[Bronze]]}}",
    found="[[Pompeii]], [[Campania]], Italy", period="[[Hellenistic period]]",
    present_location="[[Brooklyn Museum]], [[New York City]]", accession="Brooklyn Museum collection",
    count="A group of coins in rows", culture="[[Ancient Greece|Greek]]",
)
_POMPEII = dict(
    name="Pompeii", native_name="''Pompei''", native_name_lang="it", image="Pompeii Forum.jpg",
    image_size="250px", alt="Ruined columns of the forum", caption="The Forum with [[Mount Vesuvius]] behind",
    map_type="Italy", map_alt="Map of Italy", relief="yes",
    coordinates="{{coord|40|45|04|N|14|29|13|E|display=inline,title}}",
    location="[[Pompei]], [[Province of Naples]], [[Campania]], Italy", region="[[Campania]]",
    type="Settlement", area="{{convert|170|acre|ha|abbr=on}}",
    founded="7th&ndash;6th century BC", abandoned="[[AD 79]], buried by the [[Eruption of Mount Vesuvius in 79 AD|eruption of Mount Vesuvius]]",
    cultures="{{hlist|[[Oscans|Oscan]]|[[Samnites|Samnite]]|[[Ancient Rome|Roman]]}}",
    excavations="Since {{Start date|1748}}", condition="Ruins", public_access="Yes",
    website="{{URL|http://pompeiisites.org/}}",
)
_DENARII = dict(
    name="Denarius", image="Denarius of Augustus.jpg", image_size="200px", alt="A small silver coin",
    caption="A tray of Roman silver denarii", type="[[Coin]]", country="[[Roman Republic]], [[Roman Empire]]",
    material="[[Silver]]", value="10 [[As (Roman coin)|asses]], later 16",
    years_of_minting="c. {{circa|211 BC}} &ndash; 3rd century AD",
    mass="{{convert|4.5|g|oz|abbr=on}} (early)", successor="[[Antoninianus]]",
)
_XDF = dict(
    name="Hubble eXtreme Deep Field", image="Hubble Extreme Deep Field (full resolution).png",
    image_size="260px", alt="Thousands of faint galaxies on black",
    caption="The XDF, released {{Start date|2012|9|25}}",
    type="[[Deep field]] image", telescope="[[Hubble Space Telescope]]",
    constellation="[[Fornax]]", ra="{{RA|3|32|38.5}}", dec="{{DEC|-27|47|0}}",
    exposure="About 2 million seconds (over 10 years, 2002&ndash;2012)",
    instruments="{{ubl|[[Advanced Camera for Surveys|ACS]]|[[Wide Field Camera 3|WFC3]]}}",
    galaxies="About 5,500", oldest="About 13.2 billion years ago",
    released="{{Start date|2012|9|25}}", area="2.3 by 2 arcminutes",
    related="Part of the [[Hubble Ultra-Deep Field|Hubble Ultra Deep Field]]",
)
_UDF = dict(
    name="Hubble Ultra Deep Field", image="Hubble ultra deep field.jpg", image_size="260px",
    alt="A field of galaxies", caption="The HUDF (2004)", type="[[Deep field]] image",
    telescope="[[Hubble Space Telescope]]", constellation="[[Fornax]]",
    galaxies="An estimated 10,000", released="{{Start date|2004|3|9}}",
    exposure="About 1 million seconds", area="2.4 arcminutes square",
    instruments="{{ubl|[[Advanced Camera for Surveys|ACS]]|[[NICMOS]]}}",
)
_MOON = dict(
    name="Moon", image="FullMoon2010.jpg", image_size="220px", alt="The full Moon",
    caption="Grey cratered lunar surface", adjectives="{{hlist|Lunar|Selenic}}",
    satellite_of="[[Earth]]", mean_distance="{{convert|384400|km|mi|abbr=on}} (mean distance from Earth)",
    perigee="{{convert|362600|km|mi|abbr=on}}", apogee="{{convert|405400|km|mi|abbr=on}}",
    period="27.322 days ([[sidereal month]])", mean_radius="{{convert|1737.4|km|mi|abbr=on}}",
    diameter="{{convert|3474.8|km|mi|abbr=on}}", surface_grav="1.622 m/s<sup>2</sup> (0.1654 [[g-force|''g'']])",
    albedo="0.12", temperatures="{{convert|-173|C|F}} to {{convert|127|C|F}}",
    surface="[[Impact crater|Craters]] and dark basaltic plains ([[lunar mare|maria]])",
)
_MERCURY = dict(
    name="Mercury (planet)", image="Mercury in true color.jpg", image_size="220px",
    alt="A grey cratered planet", caption="Cratered surface of Mercury",
    adjectives="Mercurian", semimajor="{{convert|57.91|e6km|e6mi|abbr=on}} from the [[Sun]]",
    period="87.97 days", mean_radius="{{convert|2439.7|km|mi|abbr=on}}",
    diameter="{{convert|4879|km|mi|abbr=on}}", satellites="None",
    surface="Heavily cratered, much like the Moon",
)
_HORSE = dict(
    name="Horse", image="Nokota Horses cropped.jpg", image_size="250px", alt="Two horses",
    caption="Black silhouette of a horse in profile", status="Domesticated",
    species="''[[Equus ferus caballus]]''", kingdom="[[Animal]]ia", order="[[Odd-toed ungulate|Perissodactyla]]",
    family="[[Equidae]]", domestication="About 5,500 years ago, on the [[Eurasian Steppe|steppe]]",
    gestation_period="About 11 months (approx.&nbsp;340&nbsp;days)",
    lifespan="25&ndash;30 years", height="{{convert|1.4|-|1.8|m|ft|abbr=on}} at the [[withers]]",
    weight="{{convert|380|-|1000|kg|lb|abbr=on}}", young="[[Foal]]",
)
_TOWER = dict(
    name="Tower of Buddhist Incense", native_name="{{lang|zh|佛香閣}}", image="Foxiangge.jpg",
    image_size="250px", alt="An octagonal tower with yellow roofs above trees",
    caption="The tower on [[Longevity Hill]] seen from [[Kunming Lake]]",
    mapframe="yes", mapframe_zoom="14", coordinates="{{coord|39|59|59|N|116|16|16|E|type:landmark|display|=|inline}}",
    other_name="Foxiang Ge", location="[[Longevity Hill]], [[Summer Palace]], [[Beijing]], China",
    type="[[Chinese pagoda|Octagonal tower]]", style="[[Chinese architecture|Chinese imperial]]",
    height="{{convert|41|m|ft|0|abbr=on}}", floors="3 (four-tiered eaves)",
    built="{{Start date|1750}} under the [[Qianlong Emperor]]",
    destroyed="1860 ([[Second Opium War]])", rebuilt="1890s",
    nearby_lake="[[Kunming Lake]]", part_of="[[Summer Palace]]",
)
_SUMMER_PALACE = dict(
    name="Summer Palace", native_name="{{lang|zh|頤和園}}", image="Summer Palace at Beijing.jpg",
    image_size="250px", alt="Palace buildings on a hill above a lake", mapframe="yes",
    coordinates="{{coord|39|59|58|N|116|16|2|E|display=title}}",
    type="[[Chinese garden|Imperial garden]]", location="[[Haidian District]], [[Beijing]], China",
    area="{{convert|2.9|km2|sqmi|abbr=on}}", created="{{Start date|1750}}",
    founder="[[Qianlong Emperor]]", rebuilt="1880s by [[Empress Dowager Cixi]]",
    lake="[[Kunming Lake]] (about three quarters of the grounds)", hill="[[Longevity Hill]], about 60&nbsp;m",
    operated_by="Beijing Municipal Administration of Parks", public_transit="[[Beijing Subway]] [[Line 4, Beijing Subway|Line 4]]",
)
_HALL = dict(
    name="Hall of Prayer for Good Harvests", native_name="{{lang|zh|祈年殿}}", image="Temple of Heaven.jpg",
    image_size="220px", alt="A round hall with three blue roofs", caption="The hall in the [[Temple of Heaven]]",
    coordinates="{{coord|39|52|56|N|116|24|25|E}}", location="[[Temple of Heaven]], [[Beijing]], China",
    type="Round sacrificial hall", height="{{convert|38|m|ft|abbr=on}}",
    diameter="{{convert|32|m|ft|abbr=on}}", built="{{Start date|1420}}", rebuilt="1889&ndash;1896 after a fire",
    roof="Triple-gabled, blue glazed tiles", material="Wood, no nails",
)
_DAHLIA = dict(
    name="Dahlia", image="Dahlia x hybrida.jpg", image_size="240px", alt="An orange many-petalled flower",
    caption="An orange garden dahlia", regnum="[[Plantae]]", familia="[[Asteraceae]]",
    tribus="[[Coreopsideae]]", genus="''Dahlia''", genus_authority="[[Antonio José Cavanilles|Cav.]]",
    native_range="[[Mexico]] and [[Central America]]", type="Tuberous [[perennial]]",
    national_flower_of="[[Mexico]] (declared {{Start date|1963}})",
    hardiness="Tubers are not frost-hardy", species_count="About 42",
    flowering="Midsummer to autumn",
)
_MARIGOLD = dict(
    name="Tagetes erecta", image="Tagetes erecta.jpg", image_size="220px", alt="A large orange flower",
    caption="African marigold", common_names="{{ubl|African marigold|Aztec marigold|Mexican marigold}}",
    familia="[[Asteraceae]]", genus="''[[Tagetes]]''", species="''T. erecta''",
    native_range="[[Mexico]] and [[Central America]]", life_cycle="[[Annual plant|Annual]]",
    flowers="Large orange or yellow pompons", uses="{{hlist|Ornamental|[[Día de Muertos]] offerings|Dye}}",
)
_PRIDE = dict(
    name="Pride and Prejudice", image="PrideAndPrejudiceTitlePage.jpg", image_size="200px",
    caption="Title page of the first edition", alt="Book cover",
    author="[[Jane Austen]]", country="United Kingdom", language="English", genre="[[Novel of manners]]",
    set_in="[[Hertfordshire]] and [[Derbyshire]], England", publisher="[[Thomas Egerton (publisher)|Thomas Egerton]]",
    release_date="{{Start date|1813|1|28}}", media_type="Print (hardback, three volumes)",
    pages="279", preceded_by="''[[Sense and Sensibility]]''", followed_by="''[[Mansfield Park]]''",
    protagonist="[[Elizabeth Bennet]]", characters="{{ubl|[[Elizabeth Bennet]]|[[Mr. Darcy|Fitzwilliam Darcy]]|[[Jane Bennet]]}}",
    author_birth="{{birth date|1775|12|16|df=y}}, [[Steventon, Hampshire]]",
    author_death="{{death date|1817|7|18|df=y}}, [[Winchester]]",
    wikisource="Pride and Prejudice",
)
_SENSE = dict(
    name="Sense and Sensibility", image="SenseAndSensibilityTitlePage.jpg", image_size="200px",
    caption="Title page of the first edition", alt="Book cover", author="[[Jane Austen]]",
    country="United Kingdom", language="English", genre="[[Romance novel]]",
    publisher="[[Thomas Egerton (publisher)|Thomas Egerton]]", release_date="{{Start date|1811}}",
    protagonist="Elinor and Marianne Dashwood", followed_by="''[[Pride and Prejudice]]''",
)
_MOBY = dict(
    name="Moby-Dick", image="Moby-Dick FE title page.jpg", image_size="220px", alt="Title page",
    caption="Title page of the first American edition", author="[[Herman Melville]]",
    title_orig="Moby-Dick; or, The Whale", country="United States", language="English",
    genre="{{hlist|[[Adventure fiction]]|[[Epic (genre)|Epic]]|[[Sea story]]}}",
    publisher="{{ubl|[[Richard Bentley (publisher)|Richard Bentley]] (London)|[[Harper &amp; Brothers]] (New York)}}",
    release_date="{{Start date|1851|10|18}} (London)<br />{{Start date|1851|11|14}} (New York)",
    media_type="Print", pages="635 (first US edition)", ship="''[[Pequod (Moby-Dick)|Pequod]]''",
    narrator="[[Ishmael (Moby-Dick)|Ishmael]]", characters="{{ubl|[[Captain Ahab]]|[[Ishmael (Moby-Dick)|Ishmael]]|[[Queequeg]]|[[Starbuck (Moby-Dick)|Starbuck]]}}",
    oclc="932550",
)
_BRICK = dict(
    name="Running bond", image="Running bond brickwork.jpg", image_size="200px", alt="Grey brick wall",
    caption="Grey brick wall in running bond", type="[[Brickwork]] bond",
    other_names="{{hlist|Stretcher bond|Half bond}}", pattern="Each course offset by half a brick",
    use="Cavity walls and [[veneer (masonry)|veneer]]", strength="Lower transverse strength than [[English bond]]",
    bricks="Stretchers only", material="[[Brick]] and [[mortar (masonry)|mortar]]",
)
_GRAVEL = dict(
    name="Pea gravel", image="Pea gravel.jpg", image_size="200px", alt="Small grey stones",
    caption="Close-up of pea gravel", type="[[Gravel]]", size="{{convert|3|-|10|mm|in|abbr=on}}",
    shape="Rounded", origin="River and glacial deposits", uses="{{hlist|Paths|Drainage|Playgrounds}}",
    colour="Grey, tan and white",
)
_GRASS = dict(
    name="Lawn", image="Lawn grass.jpg", image_size="200px", alt="Grass blades",
    caption="Close-up of mown grass", type="Turf", grasses="{{ubl|''[[Poa pratensis]]'' (Kentucky bluegrass)|''[[Festuca]]'' (fescue)|''[[Lolium perenne]]'' (ryegrass)}}",
    mowing_height="{{convert|5|-|8|cm|in|abbr=on}}", season="Cool-season", watering="About 25 mm a week",
    uses="{{hlist|Gardens|Parks|Sports fields}}",
)
_COLOR_WHEEL = dict(
    name="Color wheel", image="RGB color wheel.svg", image_size="200px", alt="A circular rainbow",
    caption="An RGB hue wheel on black", type="[[Color theory|Colour diagram]]",
    inventor="[[Isaac Newton]] (1704)", model="[[RGB color model|RGB]]",
    primaries="{{hlist|Red|Green|Blue}}", centre="White", use="Choosing colour harmonies",
)

KG_ENTRIES: list[tuple[object, dict[str, dict]]] = [
    ("coffee", {"Espresso": _ESPRESSO}),
    (("coffee", "center crop"), {"Ristretto": _RISTRETTO}),
    ("chelsea", {"Tabby cat": _TABBY}),
    (("chelsea", "mirrored"), {"Abyssinian cat": _ABYSSINIAN}),
    ("astronaut", {"Eileen Collins": _COLLINS, "Space Shuttle orbiter model": _SHUTTLE_MODEL}),
    (("astronaut", "center crop"), {"Space Shuttle orbiter model": _SHUTTLE_MODEL}),
    ("rocket", {"Falcon 9": _FALCON9}),
    (("rocket", "warm tint"), {"Atlas V": _ATLAS}),
    ("coins", {"Greek coins from Pompeii": _GREEK_COINS, "Pompeii": _POMPEII}),
    (("coins", "mirrored"), {"Denarius": _DENARII}),
    ("hubble", {"Hubble eXtreme Deep Field": _XDF}),
    (("hubble", "mirrored"), {"Hubble Ultra Deep Field": _UDF}),
    ("moon", {"Moon": _MOON}),
    (("moon", "center crop"), {"Mercury (planet)": _MERCURY}),
    ("horse", {"Horse": _HORSE}),
    ("china", {"Tower of Buddhist Incense": _TOWER, "Summer Palace": _SUMMER_PALACE}),
    (("china", "mirrored"), {"Tower of Buddhist Incense": _TOWER}),  # two hits, same entity
    (("china", "warm tint"), {"Hall of Prayer for Good Harvests": _HALL}),
    ("flower", {"Dahlia": _DAHLIA}),
    (("flower", "warm tint"), {"Tagetes erecta": _MARIGOLD}),
    ("pride_cover", {"Pride and Prejudice": _PRIDE}),
    ("sense_cover", {"Sense and Sensibility": _SENSE}),
    ("moby_cover", {"Moby-Dick": _MOBY}),
    ("brick", {"Running bond": _BRICK}),
    ("gravel", {"Pea gravel": _GRAVEL}),
    ("grass", {"Lawn": _GRASS}),
    ("color_wheel", {"Color wheel": _COLOR_WHEEL}),
]


# --- web pages ----------------------------------------------------------------------------

# Site names for page_name suffixes ("Title - Site"), by the first label of the page's host.
SITES = {"travel": "Wanderbook Travel", "space": "Orbit Notes", "food": "The Coffee Compendium",
         "garden": "Garden Almanac", "pets": "PetCare Guide", "books": "Literary Lives",
         "style": "Fabric & Care", "games": "Board Game Rules"}
SNIPPET_CHARS = 1900  # official snippets run up to ~2,000 characters
EXTRACT_WORDS = 16  # the search-engine extract at the head of an official snippet


def _snippet(lead: str, paragraphs: tuple[str, ...]) -> str:
    """The official snippet shape: a short extract ending in "...", the same sentences again in
    full, then further passages of the page, with HTML entities (&#x27; &quot; &amp;)."""
    words = lead.split()
    extract = " ".join(words[:min(EXTRACT_WORDS, max(1, len(words) - 2))]) + " ..."
    parts = [extract, lead]
    size = len(extract) + 1 + len(lead)
    for sentence in re.split(r"(?<=[.!?])\s+", " ".join(paragraphs)):
        if not sentence or size + 1 + len(sentence) > SNIPPET_CHARS:
            break
        parts.append(sentence)
        size += 1 + len(sentence)
    return html.escape(" ".join(parts), quote=True)


def _page(title: str, url: str, lead: str, *paragraphs: str) -> dict:
    site = SITES[url.split("//", 1)[1].split(".", 1)[0]]
    return dict(page_name=f"{title} - {site}", page_url=url, page_snippet=_snippet(lead, paragraphs),
                text="\n\n".join((lead, *paragraphs)))


_SUMMER_PALACE_LONG = [
    "The Summer Palace (Yiheyuan) lies in the Haidian District of north-western Beijing, about 15 km from the city centre. "
    "It is a vast ensemble of lakes, gardens and palaces that covers about 2.9 square kilometres, three quarters of which is water. "
    "Kunming Lake, the central lake, was enlarged in the 18th century to imitate the West Lake of Hangzhou, and Longevity Hill, "
    "about 60 metres high, was built up from the earth dug out of the lake. The Tower of Buddhist Incense, the Hall of Dispelling Clouds "
    "and the Long Corridor form the main axis that runs from the lake shore to the top of the hill.",
    "The imperial garden began in 1750 when the Qianlong Emperor created the Garden of Clear Ripples to celebrate his mother's birthday. "
    "Anglo-French troops burned it in 1860 during the Second Opium War. The Empress Dowager Cixi had it rebuilt in the 1880s with funds "
    "partly diverted from the navy, and in 1888 it received its present name, Yiheyuan, the Garden of Preserved Harmony. It was damaged again "
    "in 1900 and restored soon after. The last emperor's court left it in 1912, and it opened to the public as a park in 1924.",
    "Visitors usually arrive at the East Palace Gate, walk through the Hall of Benevolence and Longevity, where the court received officials, "
    "and continue along the Long Corridor. The corridor is about 728 metres long and its beams carry more than 14,000 painted scenes from "
    "Chinese history, legends and landscapes. At its western end stands the Marble Boat, a stone pavilion in the shape of a paddle steamer "
    "that Cixi restored in 1893. From the boat, ferries cross the lake to South Lake Island, which is joined to the eastern shore by the "
    "Seventeen-Arch Bridge, 150 metres long, whose balustrades are topped by more than five hundred carved lions.",
    "Behind Longevity Hill, the quieter Back Lake is lined by Suzhou Street, a reconstruction of a canal-side shopping street where eunuchs and "
    "maids once played shopkeepers for the amusement of the court. The Garden of Harmonious Interests in the north-east corner copies a famous "
    "garden in Wuxi and is a good place to escape the crowds. In winter the lake freezes and skating is popular; in summer boats can be hired.",
    "Recognition: the Summer Palace was inscribed on the UNESCO World Heritage List in 1998. The World Heritage Committee described it as a "
    "masterpiece of Chinese landscape garden design, in which the natural landscape of hills and open water is combined with artificial features "
    "such as pavilions, halls, palaces, temples and bridges to form a harmonious ensemble of outstanding aesthetic value. It also noted the palace's "
    "influence on Oriental garden art and its role as a symbol of one of the world's major civilizations.",
    "Practical notes: the palace can be reached by Beijing Subway Line 4 (Beigongmen station). Tickets for the grounds and the combined tickets "
    "that include the Tower of Buddhist Incense, Suzhou Street and the Garden of Harmonious Interests are sold at the gates; opening hours are longer "
    "in the peak season from April to October. Visitors should allow at least half a day, and a full day to walk around the whole lake.",
]

_DSCOVR_LONG = [
    "The Deep Space Climate Observatory, DSCOVR, is a space weather and Earth observation satellite operated by the US National Oceanic and "
    "Atmospheric Administration (NOAA) with NASA and the US Air Force. It launched on 11 February 2015 at 23:03 UTC on a SpaceX Falcon 9 v1.1 "
    "rocket from Space Launch Complex 40 at Cape Canaveral Air Force Station, Florida. The launch had been delayed twice, once by a radar "
    "tracking problem and once by high upper-level winds.",
    "The mission has a long history. It was first proposed in 1998 as Triana, a spacecraft that would beam a continuous picture of the sunlit "
    "Earth to the internet. The spacecraft was built but placed in storage in 2001 when its shuttle launch was cancelled. It was refurbished in "
    "the late 2000s and repurposed as a solar wind monitor to replace the ageing Advanced Composition Explorer, while keeping its Earth-viewing "
    "instruments.",
    "After launch DSCOVR travelled for about 110 days to a Lissajous orbit around the Sun-Earth Lagrange point L1, about 1.5 million kilometres "
    "from Earth in the direction of the Sun. From there its Plasma-Magnetometer instrument measures the solar wind about an hour before it reaches "
    "Earth, giving forecasters warning of geomagnetic storms that can disturb power grids, satellites and radio communications.",
    "Two NASA instruments look back at Earth. The Earth Polychromatic Imaging Camera, EPIC, takes full-disc colour images of the sunlit side of the "
    "planet several times a day, and the National Institute of Standards and Technology Advanced Radiometer, NISTAR, measures the energy reflected "
    "and emitted by the whole Earth. EPIC's images are published daily and have been used to track clouds, aerosols, ozone and vegetation.",
    "The launch also served as a test for SpaceX's booster recovery programme. The company planned to land the first stage on an autonomous "
    "drone ship, but heavy seas kept the ship in port, so the booster made a controlled soft landing in the ocean instead, touching down "
    "within about ten metres of its target. The first successful landing of a Falcon 9 first stage came later that year, in December 2015.",
    "EPIC's first public image, released in July 2015, was a full view of the sunlit Earth centred on the Americas, the first such picture "
    "taken from a million miles away since the Apollo era. Because DSCOVR sits close to the line between the Sun and Earth, the camera always "
    "sees a fully lit disc, and consecutive images show the planet rotating through a day. Twice a year the spacecraft's position also lets EPIC "
    "record the Moon passing in front of Earth, showing the far side of the Moon, which is never visible from the ground. Scientists use the "
    "sequence of images to study how clouds, dust from the Sahara, smoke from large wildfires and the colour of the oceans change over time, "
    "and NISTAR's measurements of the planet's overall brightness feed into studies of Earth's energy budget and climate. The images are "
    "freely available through a NASA website within about a day of being taken.",
    "In 2019 DSCOVR entered safe hold because of a problem with its inertial navigation unit, and it returned to operation in March 2020 after a "
    "software update. NOAA's Space Weather Follow On-Lagrange 1 mission, launched in 2025, is intended to continue its solar wind measurements.",
]

WEB_PAGES: list[dict] = [
    _page("Summer Palace, Beijing - history, sights and visitor guide", "https://travel.crag-mm-mini.example/beijing/summer-palace",
          "The Summer Palace is a vast ensemble of lakes, gardens and palaces in Beijing; it was inscribed on the UNESCO World Heritage List in 1998.",
          *_SUMMER_PALACE_LONG),
    _page("DSCOVR, the spacecraft a SpaceX Falcon 9 launched in February 2015: mission overview", "https://space.crag-mm-mini.example/missions/dscovr",
          "DSCOVR launched on a SpaceX Falcon 9 on 11 February 2015 and watches the solar wind from the L1 point.",
          *_DSCOVR_LONG),
    _page("How much caffeine is in espresso?", "https://food.crag-mm-mini.example/coffee/espresso-caffeine",
          "A single shot of espresso contains about 63 mg of caffeine; that's less than a mug of drip coffee.",
          "A single shot of espresso, about one fluid ounce (30 ml), contains roughly 63 milligrams of caffeine according to USDA nutrient data. "
          "A double shot therefore has about 126 mg. Per millilitre espresso is far stronger than drip coffee, but a typical 8-ounce mug of drip "
          "coffee still contains more caffeine in total, about 95 mg.",
          "The exact amount depends on the bean (robusta has nearly twice the caffeine of arabica), the dose of ground coffee and the extraction time."),
    _page("Decaffeinated coffee: how is caffeine removed?", "https://food.crag-mm-mini.example/coffee/decaf",
          "Decaf coffee is made by removing at least 97 percent of the caffeine from green beans.",
          "Decaffeination takes place before roasting. Green beans are soaked and the caffeine is extracted with water, solvents such as ethyl "
          "acetate, or supercritical carbon dioxide. A cup of decaf still contains about 2 to 15 mg of caffeine."),
    _page("STS-93: Space Shuttle Columbia deploys the Chandra X-ray Observatory", "https://space.crag-mm-mini.example/missions/sts-93",
          "STS-93, commanded by Eileen Collins in July 1999, deployed NASA's Chandra X-ray Observatory.",
          "STS-93 launched aboard Space Shuttle Columbia on 23 July 1999 and landed on 27 July. Its commander, Eileen Collins, was the first woman to "
          "command a Space Shuttle mission.",
          "The main goal of the five-day mission was to deploy the Chandra X-ray Observatory, at the time the heaviest payload ever carried by the "
          "shuttle. Chandra, named after the astrophysicist Subrahmanyan Chandrasekhar, studies X-rays from black holes, supernova remnants and galaxy clusters."),
    _page("Sally Ride, first American woman in space", "https://space.crag-mm-mini.example/people/sally-ride",
          "Sally Ride flew on STS-7 in June 1983, becoming the first American woman in space.",
          "Sally Ride (1951-2012) was a physicist and NASA astronaut. She flew on Space Shuttle Challenger on STS-7 in 1983 and on STS-41-G in 1984, "
          "and later served on the panels that investigated the Challenger and Columbia accidents."),
    _page("Hubble Space Telescope: launch and servicing history", "https://space.crag-mm-mini.example/telescopes/hubble-history",
          "Hubble was launched on 24 April 1990 aboard Space Shuttle Discovery on mission STS-31, NASA's first \"great observatory\" flight.",
          "The Hubble Space Telescope was launched on 24 April 1990 aboard Space Shuttle Discovery (STS-31) and released into orbit the next day. "
          "Its 2.4-metre primary mirror turned out to have a flaw, which the first servicing mission corrected with new optics in December 1993.",
          "Five shuttle servicing missions between 1993 and 2009 repaired and upgraded the telescope. Hubble orbits Earth at about 540 km."),
    _page("James Webb Space Telescope facts", "https://space.crag-mm-mini.example/telescopes/jwst",
          "The James Webb Space Telescope launched on 25 December 2021 on an Ariane 5 rocket.",
          "JWST launched on 25 December 2021 from Kourou, French Guiana, and observes in the infrared from a halo orbit around the Sun-Earth L2 point, "
          "about 1.5 million km from Earth. Its primary mirror is 6.5 m across and made of 18 gold-coated beryllium segments."),
    _page("How to overwinter dahlia tubers", "https://garden.crag-mm-mini.example/bulbs/overwinter-dahlias",
          "In cold climates, lift dahlia tubers after the first frost and store them frost-free over winter.",
          "Dahlia tubers are not frost-hardy. Where the ground freezes (roughly colder than USDA zone 8), wait until the first frost blackens the "
          "foliage, cut the stems back to about 10 cm and carefully dig up the clumps.",
          "Let the tubers dry for a few days, then store them in boxes of peat moss, vermiculite or wood shavings in a cool, dark, frost-free place "
          "around 4-10 degrees Celsius. Check them monthly and replant after the last spring frost."),
    _page("Growing marigolds from seed", "https://garden.crag-mm-mini.example/annuals/marigolds",
          "Marigolds are easy annuals: sow after the last frost in full sun.",
          "Marigolds (Tagetes) are annuals that flower from early summer until frost. Sow seeds outdoors after the last frost or indoors six weeks "
          "earlier. They need full sun and well-drained soil, and deadheading keeps them blooming."),
    _page("How much do cats sleep?", "https://pets.crag-mm-mini.example/cats/sleep",
          "Adult cats sleep about 12 to 16 hours a day; kittens and seniors sleep even more, and a cat's sleep is mostly light dozing.",
          "Adult domestic cats sleep on average 12 to 16 hours a day, and kittens and older cats can sleep up to 20 hours. Cats are crepuscular: "
          "they are most active at dawn and dusk, a habit inherited from their hunting ancestors."),
    _page("Dog sleep: what is normal?", "https://pets.crag-mm-mini.example/dogs/sleep",
          "Adult dogs sleep around 12 to 14 hours a day.",
          "Most adult dogs sleep 12 to 14 hours in a 24-hour day, puppies and large breeds more. Sudden changes in sleep can signal illness."),
    _page("Herman Melville biography", "https://books.crag-mm-mini.example/authors/herman-melville",
          "Herman Melville (1819-1891) sailed on the whaler Acushnet in 1841 before writing \"Moby-Dick\".",
          "Herman Melville was born in New York City on 1 August 1819. In January 1841 he sailed from Fairhaven, Massachusetts, on the whaling ship "
          "Acushnet, bound for the Pacific. He deserted in the Marquesas Islands in 1842, an episode he turned into his first book, Typee (1846).",
          "His experiences at sea fed Moby-Dick (1851), which sold poorly in his lifetime. He worked as a customs inspector in New York and died in 1891."),
    _page("Why does cotton shrink?", "https://style.crag-mm-mini.example/fabric-care/cotton-shrinkage",
          "Cotton shrinks because heat and agitation relax fibres that were stretched during manufacturing.",
          "During spinning and weaving, cotton fibres are pulled under tension. Washing in hot water and tumble drying let the fibres relax and swell, "
          "so the yarns contract and the garment shrinks, often by a few percent on the first wash.",
          "To limit shrinkage, wash cotton in cold water, avoid the dryer or use low heat, and reshape the garment while damp. Pre-shrunk cotton has "
          "been through this process at the factory."),
    _page("How to wash wool sweaters", "https://style.crag-mm-mini.example/fabric-care/wool",
          "Hand-wash wool in cool water with a wool detergent and dry it flat.",
          "Wool felts when heat, water and agitation make its scaly fibres lock together. Hand-wash in cool water, do not wring, and dry flat away from heat."),
    _page("Chess rules: how the pieces move", "https://games.crag-mm-mini.example/chess/how-pieces-move",
          "In chess the bishop moves only diagonally, the rook only along ranks and files; the knight's move is an L.",
          "Chess is played on a board of 64 squares in eight rows and eight columns. The king moves one square in any direction; the queen any number "
          "of squares in any direction; the rook along ranks and files; the bishop only diagonally, so it always stays on squares of one colour; the "
          "knight in an L shape, jumping over other pieces; and the pawn forward, capturing diagonally."),
    _page("Checkers (draughts) basics", "https://games.crag-mm-mini.example/checkers/basics",
          "Checkers is played on the dark squares of an 8x8 board with 12 pieces per side.",
          "Each player starts with 12 pieces on the dark squares. Pieces move diagonally forward and capture by jumping; a piece that reaches the far "
          "row is crowned a king and may then move backward."),
    # pages the grown multi-turn split answers from, each beside a neighbour on a close topic
    _page("Mount Vesuvius: hiking the volcano above Naples", "https://travel.crag-mm-mini.example/italy/vesuvius",
          "Mount Vesuvius rises to about 1,281 metres above the Bay of Naples; its eruption of AD 79 buried Pompeii and Herculaneum.",
          "Mount Vesuvius is a stratovolcano on the Bay of Naples in Campania, about 9 km east of the city. Its summit stands at about 1,281 metres, "
          "a height that changes with every large eruption: the cone has been built up and blown apart many times. The volcano is the only one on "
          "the European mainland to have erupted in the last hundred years.",
          "Its best-known eruption, in AD 79, buried the Roman towns of Pompeii and Herculaneum under ash and pumice. Pliny the Younger watched it "
          "from across the bay and described the tall column of smoke in two letters to the historian Tacitus; his uncle, Pliny the Elder, died "
          "trying to rescue people by ship. The last eruption, in March 1944, destroyed several villages and about eighty aircraft at a nearby airfield.",
          "Visiting: the Vesuvius National Park was created in 1995. A shuttle bus runs from Ercolano and Pompeii to a car park at about 1,000 "
          "metres, and from there a gravel path climbs for about 30 minutes to the rim of the crater, which is roughly 450 metres across. Tickets "
          "must be booked online in advance, and the path closes in bad weather and during high winds."),
    _page("Mount Etna facts", "https://travel.crag-mm-mini.example/italy/etna",
          "Mount Etna, on the east coast of Sicily, is the highest active volcano in Europe outside the Caucasus.",
          "Etna stands about 3,300 metres high, a figure that changes with its frequent eruptions. It is one of the most active volcanoes in the "
          "world and has been a UNESCO World Heritage Site since 2013. Cable cars and four-wheel-drive buses take visitors to about 2,900 metres."),
    _page("Apollo 11: the first crewed landing on the Moon", "https://space.crag-mm-mini.example/missions/apollo-11",
          "Apollo 11 landed on the Moon on 20 July 1969; Neil Armstrong and Buzz Aldrin walked on the surface while Michael Collins orbited above.",
          "Apollo 11 launched from Kennedy Space Center on 16 July 1969 on a Saturn V rocket. Its crew were the commander Neil Armstrong, the lunar "
          "module pilot Edwin &quot;Buzz&quot; Aldrin and the command module pilot Michael Collins. On 20 July Armstrong and Aldrin landed the lunar "
          "module Eagle in the Sea of Tranquility, while Collins stayed in lunar orbit aboard the command module Columbia.",
          "Armstrong stepped onto the surface about six and a half hours after landing, saying &quot;That's one small step for man, one giant leap "
          "for mankind.&quot; Aldrin joined him about twenty minutes later. The two spent about two and a quarter hours outside, collected 21.5 kg "
          "of rock and soil, set up a seismometer and a laser reflector, and planted a US flag.",
          "The crew splashed down in the Pacific Ocean on 24 July 1969 and were recovered by the aircraft carrier USS Hornet. They spent 21 days in "
          "quarantine in case they had brought back lunar microbes. The command module Columbia is displayed at the National Air and Space Museum in Washington."),
    _page("Apollo 13: the mission that returned without landing", "https://space.crag-mm-mini.example/missions/apollo-13",
          "Apollo 13 launched in April 1970; an oxygen tank exploded on the way to the Moon and the crew returned safely.",
          "Jim Lovell, Jack Swigert and Fred Haise launched on 11 April 1970. Two days later an oxygen tank in the service module exploded, and the "
          "crew used the lunar module Aquarius as a lifeboat, looping around the Moon before splashing down on 17 April."),
    _page("Horse gaits: walk, trot, canter and gallop", "https://pets.crag-mm-mini.example/horses/gaits",
          "A horse's gallop averages about 40 to 48 km/h; the walk, trot and canter are slower.",
          "Horses have four natural gaits. The walk is a four-beat gait at about 6 to 7 km/h. The trot is a two-beat gait in which diagonal legs move "
          "together, at about 13 to 19 km/h. The canter is a controlled three-beat gait at 16 to 27 km/h. The gallop, the fastest, is a four-beat "
          "gait with a moment when all four hooves are off the ground; it averages about 40 to 48 km/h.",
          "Thoroughbred racehorses can reach about 70 km/h over short distances, and Quarter Horses sprinting over a quarter mile are faster still. "
          "A horse cannot gallop for long: most need rest after two or three kilometres at full speed. Some breeds, such as the Icelandic horse, "
          "have extra gaits like the smooth four-beat tölt."),
    _page("Oat, almond and soy: milk alternatives for coffee", "https://food.crag-mm-mini.example/milk/alternatives",
          "Almond milk is made from almonds ground with water and strained; oat milk is made the same way from oats.",
          "Plant milks are made by soaking a nut, grain or bean, grinding it with water and straining out the solids. Almond milk is made from "
          "almonds ground with water; commercial versions contain only about 2 to 3 percent almonds and are usually fortified with calcium. Oat milk "
          "is made from oats and water, with enzymes that break the starch into sugars, which gives it a naturally sweet taste.",
          "For coffee, oat milk is the barista's favourite because it foams well and does not split in hot drinks. Almond milk has a light nutty "
          "flavour but can curdle in acidic coffee; soy milk has the most protein and foams nearly as well as cow's milk."),
    _page("San Marzano tomatoes: the sauce tomato of Campania", "https://garden.crag-mm-mini.example/vegetables/san-marzano-tomatoes",
          "The San Marzano is a plum tomato from Campania, grown near San Marzano sul Sarno and prized for sauce.",
          "San Marzano is an heirloom variety of plum tomato named after the town of San Marzano sul Sarno, near Naples in the Campania region of "
          "Italy, where it grows in the volcanic soil of the Sarno valley. The fruit is long and pointed, with thick flesh, few seeds and a sweet, "
          "low-acid taste, which makes it the classic tomato for sauce and for canning whole; the protected designation Pomodoro San Marzano "
          "dell'Agro Sarnese-Nocerino applies only to tomatoes grown in that area.",
          "In the garden San Marzano is an indeterminate variety: the vines keep growing and need tall stakes or cages. Start the seeds indoors six "
          "to eight weeks before the last frost and plant out when nights stay above 10 degrees Celsius. The first fruit ripens about 80 days after "
          "transplanting."),
    _page("Lisbon travel guide: Portugal's capital on the Tagus", "https://travel.crag-mm-mini.example/portugal/lisbon",
          "Lisbon is the capital and largest city of Portugal, built on seven hills above the Tagus estuary.",
          "Lisbon has been Portugal's capital since the 13th century. The earthquake, tsunami and fires of 1 November 1755 destroyed much of the "
          "city, and the Marquis of Pombal rebuilt the lower town, the Baixa, on a grid of wide streets. The old Alfama district, which survived, "
          "climbs from the river to São Jorge Castle.",
          "Getting around: the yellow tram 28 winds through Graça, Alfama and Baixa; funiculars climb the steepest hills; and the metro reaches the "
          "airport. In Belém, west of the centre, the Jerónimos Monastery and the Belém Tower recall the voyages of Vasco da Gama."),
    _page("Porto city guide", "https://travel.crag-mm-mini.example/portugal/porto",
          "Porto, Portugal's second city, stands on the Douro river and gave its name to port wine.",
          "Porto's historic centre, the Ribeira, is a UNESCO World Heritage Site. Port wine ages in the lodges of Vila Nova de Gaia across the Dom Luís I Bridge."),
    _page("World Chess Championship: a history of the title", "https://games.crag-mm-mini.example/chess/world-champions",
          "Garry Kasparov held the world chess title from 1985 to 2000; in 1997 he lost a match to IBM&#x27;s Deep Blue.",
          "The first official World Chess Championship was played in 1886, when Wilhelm Steinitz beat Johannes Zukertort. Later champions include "
          "Emanuel Lasker, who held the title for 27 years, José Raúl Capablanca, Alexander Alekhine, Mikhail Botvinnik and Bobby Fischer, who won it "
          "in 1972 against Boris Spassky in Reykjavík.",
          "Garry Kasparov took the title from Anatoly Karpov in 1985, at 22 the youngest undisputed champion, and held it until Vladimir Kramnik beat "
          "him in London in 2000. In May 1997 Kasparov lost a six-game match to IBM's computer Deep Blue, 3.5 to 2.5, the first defeat of a reigning "
          "world champion by a computer under tournament conditions.",
          "Magnus Carlsen of Norway won the title in 2013 and defended it four times before declining to play in 2023."),
    _page("STS-114: Discovery's Return to Flight", "https://space.crag-mm-mini.example/missions/sts-114",
          "STS-114, commanded by Eileen Collins, flew on Space Shuttle Discovery in 2005, the first shuttle flight after the Columbia accident.",
          "STS-114 was the first Space Shuttle mission after the loss of Columbia in February 2003, and NASA called it Return to Flight. Space "
          "Shuttle Discovery lifted off from Kennedy Space Center on 26 July 2005 with a crew of seven commanded by Eileen Collins, and landed at "
          "Edwards Air Force Base in California on 9 August after a flight of 13 days, 21 hours and 32 minutes.",
          "The crew docked with the International Space Station, delivered supplies in the Raffaello logistics module and tested new ways to inspect "
          "and repair the orbiter's heat shield in orbit. During the approach to the station Collins flew the first rendezvous pitch manoeuvre, a "
          "back flip that let the station crew photograph Discovery's belly. Spacewalker Stephen Robinson pulled two protruding gap fillers from "
          "between the heat-shield tiles."),
    _page("SpaceX: company profile", "https://space.crag-mm-mini.example/companies/spacex",
          "SpaceX was founded by Elon Musk in 2002; its Falcon 1 became the first privately developed liquid-fuel rocket to reach orbit in 2008.",
          "Space Exploration Technologies Corp., SpaceX, was founded in 2002 by Elon Musk with the aim of cutting the cost of access to space. Its "
          "first rocket, the small Falcon 1, failed on its first three launches; the fourth, on 28 September 2008, reached orbit, the first "
          "privately developed liquid-fuel rocket to do so.",
          "The larger Falcon 9 first flew in 2010, and in 2012 the company's Dragon capsule became the first commercial spacecraft to deliver cargo "
          "to the International Space Station. SpaceX landed a Falcon 9 first stage in December 2015 and has since reflown boosters many times. "
          "Crew Dragon began carrying NASA astronauts in 2020, and the company's Starlink network of internet satellites is the largest satellite "
          "constellation in orbit."),
    _page("Atlas V launch vehicle", "https://space.crag-mm-mini.example/rockets/atlas-v",
          "Atlas V, operated by United Launch Alliance, has flown since 2002.",
          "Atlas V is an expendable rocket operated by United Launch Alliance. It has launched missions such as the Mars rovers Curiosity and "
          "Perseverance and the New Horizons probe to Pluto."),
]
