"""The hand-written content of the crag-mm-mini benchmark: pictures, conversations, image KG, web pages.

Conventions:
- `PICTURES[key]` says which picture a session shows (`source` from minibench.images.SOURCES,
  an optional degradation), its https URL (None = egocentric, like the real dataset) and its
  image_quality label.
- A turn is (domain, query_category, dynamism, query, answer, where), `where` naming the
  source that holds the answer: "image" (visible in the picture), "kg" (image-search KG),
  "web" (web-search pages) or "none" (no source we ship holds it).
- Domains and categories follow CRAG-MM's published taxonomy (13 domains; simple recognition,
  simple knowledge, multi-hop, comparison, aggregation, reasoning).
"""
from __future__ import annotations

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
]


def _p(*paragraphs: str) -> str:
    return "\n".join(paragraphs)


# --- image KG -----------------------------------------------------------------------------
# Each entry: (picture, entities). A picture is a PICTURES key (the benchmark image itself) or
# (source, transform) for a look-alike copy that serves as a hard negative.
KG_ENTRIES: list[tuple[object, dict[str, dict]]] = [
    ("coffee", {"espresso": dict(
        description=_p("Espresso is a concentrated coffee made by forcing hot water at high pressure through finely ground coffee.",
                       "It originated in Italy at the start of the 20th century and is served in small cups, often with a layer of crema on top."),
        caption="A cup of espresso on a saucer with a spoon.",
        summary="Concentrated Italian coffee served in a demitasse.",
        origin="Italy", serving_size="about 30 ml (1 fl oz) per single shot", category="coffee drink")}),
    (("coffee", "center crop"), {"ristretto": dict(
        description="A ristretto is a 'restricted' espresso shot pulled with about half the water, giving a sweeter, more concentrated drink.",
        caption="A short ristretto in a red cup.", summary="A half-volume espresso shot.",
        origin="Italy", serving_size="about 15-20 ml", category="coffee drink")}),
    ("chelsea", {"tabby cat": dict(
        description=_p("A tabby is any domestic cat whose coat shows stripes, swirls or spots, usually with a distinctive 'M' marking on the forehead.",
                       "Tabby is a coat pattern, not a breed; it occurs in many breeds and in mixed-breed cats."),
        caption="Close-up of a tabby cat's face with green eyes.",
        summary="Domestic cat with a striped tabby coat.",
        species="Felis catus", forehead_marking="M", lifespan="12-18 years")}),
    (("chelsea", "mirrored"), {"Abyssinian cat": dict(
        description="The Abyssinian is a short-haired breed with a ticked coat: each hair has bands of colour, so the coat looks evenly flecked rather than striped.",
        caption="An Abyssinian cat looking at the camera.", summary="Short-haired breed with a ticked ruddy coat.",
        species="Felis catus", origin="Ethiopia region (disputed), developed in Britain", lifespan="9-15 years")}),
    ("astronaut", {"Eileen Collins": dict(
        description=_p("Eileen Marie Collins (born 19 November 1956 in Elmira, New York) is a retired NASA astronaut and US Air Force colonel.",
                       "She was the first woman to pilot a Space Shuttle (STS-63, February 1995) and the first woman to command one (STS-93, July 1999).",
                       "She retired from NASA in 2006 after 38 days in space."),
        caption="Official NASA portrait of Eileen Collins in an orange launch and entry suit.",
        summary="First woman to pilot and to command a Space Shuttle.",
        born="1956-11-19", first_command="STS-93 (1999)", retired="2006", occupation="astronaut, test pilot")}),
    (("astronaut", "center crop"), {"Space Shuttle Discovery model": dict(
        description="A scale model of the Space Shuttle orbiter, often placed in official astronaut portraits.",
        caption="Model of a Space Shuttle beside a flag.", summary="Desk model of the Space Shuttle orbiter.",
        material="resin")}),
    ("rocket", {"Falcon 9": dict(
        description=_p("Falcon 9 is a two-stage, partially reusable orbital launch vehicle designed and built by SpaceX.",
                       "It first flew in 2010; its first-stage booster first landed successfully in December 2015. The rocket stands about 70 m tall."),
        caption="A Falcon 9 rocket on the launch pad at dusk, between lightning-protection towers.",
        summary="SpaceX's partially reusable medium-lift rocket.",
        manufacturer="SpaceX", first_flight="2010-06-04", height="about 70 m", stages="2")}),
    (("rocket", "warm tint"), {"Atlas V": dict(
        description="Atlas V is an expendable launch vehicle built by Lockheed Martin and operated by United Launch Alliance, in service since 2002.",
        caption="An Atlas V rocket on the pad at night.", summary="ULA's expendable medium/heavy rocket.",
        manufacturer="United Launch Alliance", first_flight="2002-08-21", height="58.3 m", stages="2")}),
    ("coins", {"Greek coins from Pompeii": dict(
        description=_p("A group of ancient Greek coins found at Pompeii, photographed for the Brooklyn Museum's collection.",
                       "Pompeii was buried under volcanic ash in the eruption of Mount Vesuvius in AD 79, which preserved many everyday objects."),
        caption="Rows of ancient silver and bronze coins on a grey background.",
        summary="Ancient Greek coins recovered at Pompeii.",
        found_at="Pompeii, Italy", city_destroyed="AD 79 (eruption of Mount Vesuvius)", collection="Brooklyn Museum")}),
    (("coins", "mirrored"), {"Roman denarii": dict(
        description="The denarius was the standard Roman silver coin from about 211 BC until the 3rd century AD.",
        caption="A tray of Roman silver denarii.", summary="Roman silver coins.",
        material="silver", period="211 BC - 3rd century AD")}),
    ("hubble", {"Hubble eXtreme Deep Field": dict(
        description=_p("The eXtreme Deep Field (XDF), released on 25 September 2012, combines ten years of Hubble Space Telescope exposures of a small patch of sky in the constellation Fornax.",
                       "It shows about 5,500 galaxies, some seen as they were about 13.2 billion years ago. It covers part of the 2004 Hubble Ultra Deep Field."),
        caption="Thousands of faint galaxies against a black sky.",
        summary="Hubble's deepest view of the universe (2012).",
        released="2012-09-25", galaxies="about 5,500", constellation="Fornax", telescope="Hubble Space Telescope")}),
    (("hubble", "mirrored"), {"Hubble Ultra Deep Field": dict(
        description="The Hubble Ultra Deep Field, released in 2004, is an image of a small region of space in Fornax containing an estimated 10,000 galaxies.",
        caption="A deep-sky image crowded with galaxies.", summary="Hubble deep-sky image from 2004.",
        released="2004-03-09", galaxies="about 10,000", constellation="Fornax", telescope="Hubble Space Telescope")}),
    ("moon", {"Moon": dict(
        description=_p("The Moon is Earth's only natural satellite, with a diameter of about 3,474 km.",
                       "Its average distance from Earth is about 384,400 km; its surface is covered by craters and dark basaltic plains called maria."),
        caption="Grey cratered lunar surface.", summary="Earth's natural satellite.",
        average_distance_from_earth="384,400 km", diameter="3,474 km", orbital_period="27.3 days")}),
    (("moon", "center crop"), {"Mercury": dict(
        description="Mercury is the smallest planet of the Solar System and the closest to the Sun; its grey surface is heavily cratered, much like the Moon's.",
        caption="Cratered surface of Mercury.", summary="Innermost planet of the Solar System.",
        average_distance_from_sun="57.9 million km", diameter="4,879 km")}),
    ("horse", {"horse": dict(
        description=_p("The domestic horse (Equus ferus caballus) is a large odd-toed ungulate domesticated about 5,500 years ago.",
                       "A mare carries a foal for about 11 months (roughly 340 days)."),
        caption="Black silhouette of a horse standing in profile.", summary="Domesticated hoofed mammal.",
        species="Equus ferus caballus", gestation="about 11 months (about 340 days)", lifespan="25-30 years")}),
    ("china", {"Tower of Buddhist Incense": dict(
        description=_p("The Tower of Buddhist Incense (Foxiang Ge) stands on Longevity Hill in the Summer Palace, Beijing. The octagonal tower is about 41 m tall.",
                       "The first tower was built under the Qianlong Emperor in the 18th century; it was destroyed in 1860 and rebuilt in the 1890s.",
                       "Below the hill lies Kunming Lake, which covers about three quarters of the palace grounds."),
        caption="A tall octagonal Chinese tower with yellow and green roofs above trees and a lake.",
        summary="Landmark tower on Longevity Hill, Summer Palace, Beijing.",
        location="Summer Palace, Beijing, China", height="about 41 m", nearby_lake="Kunming Lake")}),
    (("china", "warm tint"), {"Hall of Prayer for Good Harvests": dict(
        description="The Hall of Prayer for Good Harvests is the round, triple-roofed hall at the Temple of Heaven in Beijing; it is about 38 m tall.",
        caption="A round hall with three blue roofs.", summary="Main hall of Beijing's Temple of Heaven.",
        location="Temple of Heaven, Beijing, China", height="about 38 m")}),
    ("flower", {"dahlia": dict(
        description=_p("Dahlias are tuberous perennials of the daisy family (Asteraceae), native to Mexico and Central America.",
                       "The dahlia was declared the national flower of Mexico in 1963. Their tubers are not frost-hardy."),
        caption="An orange, many-petalled dahlia bloom against dark green leaves.",
        summary="Showy tuberous flower, national flower of Mexico.",
        family="Asteraceae", native_to="Mexico and Central America", national_flower_of="Mexico")}),
    (("flower", "warm tint"), {"African marigold": dict(
        description="The African marigold (Tagetes erecta) is an annual with large orange or yellow pompon flowers, also native to Mexico.",
        caption="A large orange marigold flower.", summary="Annual with orange pompon blooms.",
        family="Asteraceae", species="Tagetes erecta", life_cycle="annual")}),
    ("pride_cover", {"Pride and Prejudice": dict(
        description=_p("Pride and Prejudice is a novel by Jane Austen, first published on 28 January 1813 by Thomas Egerton.",
                       "It follows Elizabeth Bennet and her changing view of Fitzwilliam Darcy."),
        caption="Book cover of Pride and Prejudice by Jane Austen.", summary="Jane Austen's 1813 novel of manners.",
        author="Jane Austen", published="1813", protagonist="Elizabeth Bennet",
        author_born="16 December 1775", author_died="18 July 1817")}),
    ("sense_cover", {"Sense and Sensibility": dict(
        description="Sense and Sensibility is Jane Austen's first published novel (1811), following the Dashwood sisters Elinor and Marianne.",
        caption="Book cover of Sense and Sensibility by Jane Austen.", summary="Jane Austen's 1811 debut novel.",
        author="Jane Austen", published="1811", protagonist="Elinor Dashwood")}),
    ("moby_cover", {"Moby-Dick": dict(
        description=_p("Moby-Dick; or, The Whale is a novel by Herman Melville published in 1851.",
                       "The sailor Ishmael narrates Captain Ahab's hunt for the white whale aboard the whaling ship Pequod."),
        caption="Book cover of Moby-Dick by Herman Melville.", summary="Herman Melville's 1851 whaling novel.",
        author="Herman Melville", published="1851", ship="Pequod", narrator="Ishmael")}),
    ("brick", {"running bond brickwork": dict(
        description="Running bond is a brick pattern in which each course is offset by half a brick, the most common bond for walls.",
        caption="Grey brick wall in running bond.", summary="Common half-offset brick pattern.")}),
    ("gravel", {"pea gravel": dict(
        description="Pea gravel is small, rounded stone about 3-10 mm across, used for paths, drainage and playgrounds.",
        caption="Close-up of small grey stones.", summary="Small rounded landscaping stone.")}),
    ("grass", {"lawn grass": dict(
        description="A lawn of cool-season turf grass such as Kentucky bluegrass, mown regularly to 5-8 cm.",
        caption="Close-up of grass blades.", summary="Mown turf grass.")}),
    ("color_wheel", {"RGB color wheel": dict(
        description="A hue wheel arranging fully saturated colours around a circle, white at the centre.",
        caption="A circular rainbow of colours on black.", summary="Colour wheel of hues.")}),
]


# --- web pages ----------------------------------------------------------------------------

def _page(name: str, url: str, snippet: str, *paragraphs: str) -> dict:
    return dict(page_name=name, page_url=url, page_snippet=snippet, text="\n\n".join(paragraphs))


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
          "The Summer Palace is a vast ensemble of lakes, gardens and palaces in Beijing, on the UNESCO World Heritage List.",
          *_SUMMER_PALACE_LONG),
    _page("DSCOVR, the spacecraft a SpaceX Falcon 9 launched in February 2015: mission overview", "https://space.crag-mm-mini.example/missions/dscovr",
          "DSCOVR launched on a SpaceX Falcon 9 on 11 February 2015 and watches the solar wind from the L1 point.",
          *_DSCOVR_LONG),
    _page("How much caffeine is in espresso?", "https://food.crag-mm-mini.example/coffee/espresso-caffeine",
          "A single shot of espresso contains about 63 mg of caffeine.",
          "A single shot of espresso, about one fluid ounce (30 ml), contains roughly 63 milligrams of caffeine according to USDA nutrient data. "
          "A double shot therefore has about 126 mg. Per millilitre espresso is far stronger than drip coffee, but a typical 8-ounce mug of drip "
          "coffee still contains more caffeine in total, about 95 mg.",
          "The exact amount depends on the bean (robusta has nearly twice the caffeine of arabica), the dose of ground coffee and the extraction time."),
    _page("Decaffeinated coffee: how is caffeine removed?", "https://food.crag-mm-mini.example/coffee/decaf",
          "Decaf coffee is made by removing at least 97 percent of the caffeine from green beans.",
          "Decaffeination takes place before roasting. Green beans are soaked and the caffeine is extracted with water, solvents such as ethyl "
          "acetate, or supercritical carbon dioxide. A cup of decaf still contains about 2 to 15 mg of caffeine."),
    _page("STS-93: Space Shuttle Columbia deploys the Chandra X-ray Observatory", "https://space.crag-mm-mini.example/missions/sts-93",
          "STS-93, commanded by Eileen Collins in July 1999, deployed the Chandra X-ray Observatory.",
          "STS-93 launched aboard Space Shuttle Columbia on 23 July 1999 and landed on 27 July. Its commander, Eileen Collins, was the first woman to "
          "command a Space Shuttle mission.",
          "The main goal of the five-day mission was to deploy the Chandra X-ray Observatory, at the time the heaviest payload ever carried by the "
          "shuttle. Chandra, named after the astrophysicist Subrahmanyan Chandrasekhar, studies X-rays from black holes, supernova remnants and galaxy clusters."),
    _page("Sally Ride, first American woman in space", "https://space.crag-mm-mini.example/people/sally-ride",
          "Sally Ride flew on STS-7 in June 1983, becoming the first American woman in space.",
          "Sally Ride (1951-2012) was a physicist and NASA astronaut. She flew on Space Shuttle Challenger on STS-7 in 1983 and on STS-41-G in 1984, "
          "and later served on the panels that investigated the Challenger and Columbia accidents."),
    _page("Hubble Space Telescope: launch and servicing history", "https://space.crag-mm-mini.example/telescopes/hubble-history",
          "Hubble was launched on 24 April 1990 aboard Space Shuttle Discovery on mission STS-31.",
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
          "Adult cats sleep about 12 to 16 hours a day; kittens and seniors sleep even more.",
          "Adult domestic cats sleep on average 12 to 16 hours a day, and kittens and older cats can sleep up to 20 hours. Cats are crepuscular: "
          "they are most active at dawn and dusk, a habit inherited from their hunting ancestors."),
    _page("Dog sleep: what is normal?", "https://pets.crag-mm-mini.example/dogs/sleep",
          "Adult dogs sleep around 12 to 14 hours a day.",
          "Most adult dogs sleep 12 to 14 hours in a 24-hour day, puppies and large breeds more. Sudden changes in sleep can signal illness."),
    _page("Herman Melville biography", "https://books.crag-mm-mini.example/authors/herman-melville",
          "Herman Melville (1819-1891) sailed on the whaler Acushnet in 1841 before writing Moby-Dick.",
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
          "In chess the bishop moves only diagonally, the rook only along ranks and files.",
          "Chess is played on a board of 64 squares in eight rows and eight columns. The king moves one square in any direction; the queen any number "
          "of squares in any direction; the rook along ranks and files; the bishop only diagonally, so it always stays on squares of one colour; the "
          "knight in an L shape, jumping over other pieces; and the pawn forward, capturing diagonally."),
    _page("Checkers (draughts) basics", "https://games.crag-mm-mini.example/checkers/basics",
          "Checkers is played on the dark squares of an 8x8 board with 12 pieces per side.",
          "Each player starts with 12 pieces on the dark squares. Pieces move diagonally forward and capture by jumping; a piece that reaches the far "
          "row is crowned a king and may then move backward."),
    _page("Atlas V launch vehicle", "https://space.crag-mm-mini.example/rockets/atlas-v",
          "Atlas V, operated by United Launch Alliance, has flown since 2002.",
          "Atlas V is an expendable rocket operated by United Launch Alliance. It has launched missions such as the Mars rovers Curiosity and "
          "Perseverance and the New Horizons probe to Pluto."),
]
