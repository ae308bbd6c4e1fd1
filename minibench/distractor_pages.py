"""Web pages about other entities of the same kinds as the mini benchmark's, to bury its pages in.

Answer recall on the mini web index (a hundred chunks) says little: the right page is found
whatever the query. Among thousands of pages about other astronauts, missions, rockets,
telescopes, volcanoes, cities, drinks, plants, breeds, authors, fabrics and games, a query has to name
what it asks about. So each page here is written like the real ones it sits beside: a title
with a site suffix, a lead paragraph, an infobox-like line of facts, then sections, built from
templates over word lists and plausible values (names, places, dates, sizes) drawn with a fixed
seed. The entities are invented (an astronaut "Marta Lindqvist", a volcano "Monte Caldaro"), so
no page states a benchmark answer about a benchmark entity, yet every page shares its kind's
vocabulary with the benchmark's pages.

`distractor_pages(n)` gives n pages in content.WEB_PAGES' shape (page_name, page_url,
page_snippet, text), the same n pages on every call.
"""
from __future__ import annotations

import random

from minibench.content import _page

FIRST = ["Marta", "Jonas", "Aiko", "Daniel", "Priya", "Tomasz", "Elena", "Samuel", "Ingrid", "Rafael", "Helen",
         "Victor", "Naomi", "Ruth", "Kenji", "Laura", "Oskar", "Amara", "Pedro", "Claire", "Mikhail", "Sofia",
         "Arthur", "Leila", "Graham", "Yusuf", "Beatriz", "Henrik", "Anita", "Connor", "Mei", "Walter", "Irene",
         "Felix", "Carmen", "Bruno", "Greta", "Malcolm", "Zofia", "Ahmed", "Nora", "Lucas", "Hana", "Edgar"]
LAST = ["Lindqvist", "Okafor", "Brennan", "Takeda", "Moreau", "Kowalski", "Hartmann", "Castillo", "Ferreira",
        "Whitfield", "Nakamura", "Duval", "Petrov", "Sandoval", "Ashworth", "Kaur", "Holloway", "Varga", "Lindgren",
        "Mercer", "Abara", "Rossi", "Fischer", "Dalton", "Novak", "Ibarra", "Sorensen", "Quinlan", "Mendes",
        "Albrecht", "Carvalho", "Haddad", "Thorne", "Ueda", "Bianchi", "Wexler", "Grady", "Oyelaran", "Strand"]
CITIES = [("Dayton", "Ohio, U.S."), ("Tucson", "Arizona, U.S."), ("Spokane", "Washington, U.S."),
          ("Lyon", "France"), ("Graz", "Austria"), ("Porto Alegre", "Brazil"), ("Sapporo", "Japan"),
          ("Tampere", "Finland"), ("Leeds", "England"), ("Halifax", "Nova Scotia, Canada"),
          ("Bergen", "Norway"), ("Kraków", "Poland"), ("Ghent", "Belgium"), ("Adelaide", "Australia"),
          ("Valencia", "Spain"), ("Bologna", "Italy"), ("Pune", "India"), ("Cork", "Ireland"),
          ("Boulder", "Colorado, U.S."), ("Omaha", "Nebraska, U.S."), ("Utrecht", "Netherlands")]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]


def _date(rng: random.Random, start: int, end: int) -> str:
    return f"{rng.randint(1, 28)} {rng.choice(MONTHS)} {rng.randint(start, end)}"


def _person(rng: random.Random) -> str:
    return f"{rng.choice(FIRST)} {rng.choice(LAST)}"


def _slug(text: str) -> str:
    return "-".join("".join(c if c.isalnum() else " " for c in text.lower()).split())


def _facts(pairs: list[tuple[str, str]]) -> str:
    return "Quick facts: " + "; ".join(f"{k}: {v}" for k, v in pairs) + "."


# --- one template per kind: (site, path, title, lead, paragraphs) -------------------------------

def astronaut(rng, n):
    name, (city, region) = _person(rng), rng.choice(CITIES)
    born, group = rng.randint(1948, 1985), rng.choice(["NASA Group 14", "NASA Group 16", "ESA Group 3",
                                                        "NASA Group 19", "JAXA Group 2", "CSA Group 3"])
    flights = [f"STS-{rng.randint(136, 199)}", f"Expedition {rng.randint(70, 99)}", f"Soyuz MS-{rng.randint(30, 60)}"]
    rng.shuffle(flights)
    flown = flights[:rng.randint(1, 3)]
    days = rng.randint(9, 420)
    branch = rng.choice(["U.S. Navy", "U.S. Air Force", "Royal Air Force", "civilian engineer", "U.S. Army"])
    return ("space", f"people/{_slug(name)}-{n}", f"{name}, astronaut: biography and missions",
            f"{name} is an astronaut who flew {len(flown)} mission{'s' if len(flown) > 1 else ''} and spent {days} days in space.",
            [_facts([("Born", f"{_date(rng, born, born)}, {city}, {region}"), ("Selection", group),
                      ("Service", branch), ("Missions", ", ".join(flown)), ("Time in space", f"{days} days")]),
             f"Early life: {name.split()[0]} grew up in {city} and studied {rng.choice(['aerospace engineering', 'physics', 'geology', 'medicine', 'mechanical engineering'])} "
             f"at {rng.choice(['Purdue University', 'the University of Toronto', 'Delft University of Technology', 'Georgia Tech', 'the University of Tokyo', 'Imperial College London'])} "
             f"before serving as a {rng.choice(['test pilot', 'flight surgeon', 'research engineer', 'flight instructor'])}.",
             f"Spaceflight: on {flown[0]}, launched {_date(rng, 2001, 2024)}, {name.split()[-1]} was the "
             f"{rng.choice(['commander', 'pilot', 'flight engineer', 'mission specialist'])} and carried out "
             f"{rng.randint(0, 5)} spacewalks, installing {rng.choice(['a truss segment', 'solar arrays', 'a docking adapter', 'a robotic arm'])}.",
             f"Later career: after leaving the astronaut corps in {rng.randint(2008, 2025)}, {name.split()[-1]} "
             f"joined {rng.choice(['a commercial spaceflight company', 'a university faculty', 'mission control', 'the agency leadership'])}."])


def mission(rng, n):
    name = f"{rng.choice(['Aurora', 'Helios', 'Polaris', 'Meridian', 'Zephyr', 'Corona', 'Vega', 'Tethys', 'Argus', 'Lumen'])}-{rng.randint(1, 9)}"
    kind = rng.choice(["space weather observatory", "Earth observation satellite", "X-ray telescope",
                       "lunar orbiter", "asteroid probe", "infrared observatory", "climate satellite"])
    rocket = rng.choice(["Falcon 9", "Atlas V", "Ariane 5", "Delta II", "H-IIA", "Vega", "Soyuz-2", "Electron"])
    orbit = rng.choice(["the Sun-Earth L1 point", "the Sun-Earth L2 point", "a sun-synchronous orbit at 705 km",
                        "a geostationary orbit", "a lunar polar orbit", "a heliocentric orbit"])
    return ("space", f"missions/{_slug(name)}-{n}", f"{name}: the {kind} and its mission",
            f"{name} is a {kind} launched on {_date(rng, 1995, 2025)} aboard a {rocket} rocket.",
            [_facts([("Operator", rng.choice(["NASA", "ESA", "NOAA", "JAXA", "ISRO", "CNES"])), ("Launch vehicle", rocket),
                      ("Orbit", orbit), ("Mass", f"{rng.randint(300, 6500)} kg"), ("Mission length", f"{rng.randint(2, 15)} years")]),
             f"Design: the spacecraft carries {rng.randint(2, 6)} instruments, among them a "
             f"{rng.choice(['magnetometer', 'spectrometer', 'wide-field camera', 'radiometer', 'particle detector'])}, "
             f"and draws power from two solar wings giving {rng.randint(1, 9)} kW.",
             f"Mission: after launch {name} travelled to {orbit}, where it "
             f"{rng.choice(['watches the solar wind', 'maps sea-surface temperature', 'surveys distant galaxies', 'images the lunar poles', 'tracks aerosols and clouds'])}. "
             f"Its first data were released {rng.randint(2, 14)} months after launch.",
             f"Legacy: the mission was extended {rng.randint(1, 3)} times; a successor, {name.split('-')[0]}-{rng.randint(10, 20)}, is planned."])


def rocket(rng, n):
    company = rng.choice(["Orbital Forge", "Northstar Launch", "Kestrel Aerospace", "Celeste Dynamics",
                          "Atlas Orbital", "Bluewater Rocketry", "Ionic Space", "Sable Launch Systems"])
    name = f"{rng.choice(['Condor', 'Falcon', 'Griffin', 'Kestrel', 'Titan', 'Ares', 'Osprey', 'Harrier'])} {rng.choice(['II', 'III', 'X', 'M', 'Light', 'Heavy'])}"
    return ("space", f"rockets/{_slug(name)}-{n}", f"{name} launch vehicle ({company})",
            f"{name} is a {rng.choice(['small', 'medium-lift', 'heavy-lift'])} orbital rocket built by {company}.",
            [_facts([("Manufacturer", company), ("Height", f"{rng.randint(18, 95)} m"), ("Stages", str(rng.choice([2, 2, 3]))),
                      ("Payload to LEO", f"{rng.randint(300, 60000)} kg"), ("First flight", _date(rng, 2003, 2025)),
                      ("Status", rng.choice(["Active", "Retired", "In development"]))]),
             f"History: {company} was founded in {rng.randint(1995, 2018)} by {_person(rng)} and flew {name} "
             f"for the first time after {rng.randint(1, 4)} failed attempts.",
             f"Design: the first stage burns {rng.choice(['kerosene and liquid oxygen', 'methane and liquid oxygen', 'solid propellant'])}; "
             f"the booster {'is recovered by landing on a drone ship' if rng.random() < 0.4 else 'is expended'}.",
             f"Launches: {name} has flown {rng.randint(1, 140)} times from {rng.choice(['Cape Canaveral', 'Vandenberg', 'Kourou', 'Wallops Island', 'Tanegashima', 'Mahia'])}."])


def telescope(rng, n):
    name = f"{rng.choice(['Ortega', 'Lindblad', 'Harrow', 'Kepler-Lowell', 'Calder', 'Whitcombe', 'Sagan-Roe'])} {rng.choice(['Space Telescope', 'Observatory', 'Survey Telescope'])}"
    return ("space", f"telescopes/{_slug(name)}-{n}", f"{name}: facts and history",
            f"The {name} launched on {_date(rng, 1989, 2025)} and observes in the {rng.choice(['ultraviolet', 'infrared', 'visible', 'X-ray', 'gamma-ray'])}.",
            [_facts([("Mirror", f"{rng.choice(['0.85', '1.1', '1.8', '2.0', '3.5', '4.2'])} m"), ("Orbit", rng.choice(['low Earth orbit at 560 km', 'L2 halo orbit', 'Earth-trailing orbit'])),
                      ("Launch vehicle", rng.choice(['Delta II', 'Ariane 5', 'Space Shuttle', 'Falcon 9', 'Soyuz-2'])), ("Operator", rng.choice(['NASA', 'ESA', 'JAXA']))]),
             f"Science: its deep fields show about {rng.randint(1, 20)},{rng.randint(100, 999)} galaxies in a patch of sky in {rng.choice(['Fornax', 'Ursa Major', 'Eridanus', 'Virgo', 'Hydra'])}.",
             f"Servicing: {rng.randint(0, 4)} repair missions replaced its gyroscopes and a camera; it is expected to operate until {rng.randint(2026, 2040)}."])


def volcano(rng, n):
    name = f"{rng.choice(['Monte', 'Mount', 'Cerro', 'Pico'])} {rng.choice(['Caldaro', 'Vesano', 'Ardente', 'Sorvino', 'Nerola', 'Fuoco', 'Alcara', 'Rocca'])}"
    country = rng.choice(["Italy", "Chile", "Iceland", "Japan", "Indonesia", "Mexico", "Guatemala"])
    height = rng.randint(900, 5600)
    return ("travel", f"volcanoes/{_slug(name)}-{n}", f"{name}: hiking the volcano",
            f"{name} is a stratovolcano in {country}, about {height:,} metres high.",
            [_facts([("Elevation", f"{height:,} m"), ("Last eruption", str(rng.randint(1700, 2024))),
                      ("Type", rng.choice(["Stratovolcano", "Shield volcano", "Caldera"])), ("Country", country)]),
             f"History: its eruption of {rng.randint(200, 1900)} buried the nearby town of {rng.choice(['San Lucido', 'Terrasca', 'Villafranca', 'Puerto Alto'])} under ash.",
             f"Visiting: a path climbs from the car park at {rng.randint(600, 2000)} metres to the crater rim in about {rng.randint(30, 180)} minutes; tickets are sold at the gate."])


def city(rng, n):
    name = rng.choice(["Alvorada", "Santa Lúcia", "Porto Novo", "Vila Serena", "Castelmar", "Montevila", "Braganza", "Estrela"])
    country = rng.choice(["Portugal", "Brazil", "Spain", "Italy", "Argentina", "Cape Verde"])
    return ("travel", f"cities/{_slug(name)}-{n}", f"{name} travel guide",
            f"{name} is a {rng.choice(['port city', 'hill town', 'regional capital', 'university town'])} in {country} of about {rng.randint(20, 900)},000 people.",
            [_facts([("Country", country), ("Founded", f"{rng.randint(9, 17)}th century"), ("River", rng.choice(['Douro', 'Tagus', 'Ebro', 'Minho', 'Paraná'])),
                      ("Best time to visit", rng.choice(['spring', 'autumn', 'early summer']))]),
             f"History: an earthquake in {rng.randint(1500, 1900)} destroyed much of the old town, rebuilt on a grid of wide streets.",
             f"Getting around: {rng.choice(['trams', 'funiculars', 'ferries', 'buses'])} link the centre with the {rng.choice(['beaches', 'castle', 'old quarter', 'wine lodges'])}."])


def drink(rng, n):
    name = f"{rng.choice(['Cortado', 'Flat white', 'Galão', 'Café bombón', 'Red eye', 'Mazagran', 'Affogato', 'Café de olla', 'Oat latte', 'Chai latte'])}"
    caffeine = rng.randint(0, 190)
    return ("food", f"drinks/{_slug(name)}-{n}", f"{name}: what it is and how much caffeine it has ({n % 89 + 1})",
            f"A {name.lower()} made the {rng.choice(['Spanish', 'Portuguese', 'Australian', 'Mexican', 'Italian'])} way has about {caffeine} mg of caffeine.",
            [_facts([("Base", rng.choice(['one espresso shot', 'two espresso shots', 'drip coffee', 'black tea'])), ("Milk", rng.choice(['steamed', 'condensed', 'oat', 'almond', 'none'])),
                      ("Serving", f"{rng.randint(60, 350)} ml"), ("Caffeine", f"about {caffeine} mg")]),
             f"Origin: the drink is said to come from {rng.choice(['Lisbon', 'Madrid', 'Melbourne', 'Valencia', 'Oaxaca', 'Trieste'])}, where cafés served it from the {rng.randint(17, 20)}th century.",
             f"Making it: pull the shot at about {rng.randint(8, 10)} bar, then add {rng.randint(20, 200)} ml of milk foamed to {rng.randint(55, 70)} °C."])


def plant(rng, n):
    crop = rng.choice(["tomato", "pepper", "bean", "squash", "lettuce", "dahlia", "marigold", "zinnia"])
    name = f"'{rng.choice(['Rosso', 'Golden', 'Cherokee', 'Marzolino', 'Bianca', 'Early', 'Amish', 'Velvet'])} {rng.choice(['Queen', 'Star', 'Giant', 'Gem', 'Beauty', 'Pride'])}' {crop}"
    return ("garden", f"varieties/{_slug(name)}-{n}", f"Growing the {name}",
            f"The {name} is a {rng.choice(['heirloom', 'hybrid', 'open-pollinated'])} variety, grown for {rng.choice(['salads', 'sauce', 'cut flowers', 'drying', 'borders'])}.",
            [_facts([("Days to harvest", str(rng.randint(45, 110))), ("Spacing", f"{rng.randint(20, 90)} cm"),
                      ("Sun", rng.choice(['full sun', 'part shade'])), ("Origin", rng.choice(['Campania', 'Tennessee', 'Provence', 'Oaxaca', 'Kent']))]),
             f"Sowing: start seeds indoors {rng.randint(4, 10)} weeks before the last frost and plant out when nights stay above {rng.randint(8, 14)} degrees Celsius.",
             f"Care: water deeply once a week, mulch, and {'lift the tubers after the first frost' if crop == 'dahlia' else 'stake tall plants'}."])


def animal(rng, n):
    kind = rng.choice(["horse", "cat", "dog", "rabbit", "parrot", "pony"])
    breed = f"{rng.choice(['Norland', 'Carpathian', 'Andalusian', 'Bengal', 'Highland', 'Baltic', 'Sable'])} {kind}"
    return ("pets", f"breeds/{_slug(breed)}-{n}", f"{breed.title()}: breed profile and care",
            f"The {breed} is a {rng.choice(['hardy', 'gentle', 'lively', 'calm'])} breed that lives {rng.randint(8, 30)} years.",
            [_facts([("Height", f"{rng.randint(20, 170)} cm"), ("Weight", f"{rng.randint(2, 600)} kg"),
                      ("Lifespan", f"{rng.randint(8, 30)} years"), ("Origin", rng.choice(['Poland', 'Spain', 'Scotland', 'India', 'Iceland']))]),
             f"Behaviour: it sleeps about {rng.randint(8, 18)} hours a day and is most active at {rng.choice(['dawn and dusk', 'midday', 'night'])}.",
             f"Care: feed {rng.choice(['hay and grass', 'a high-protein diet', 'pellets and vegetables'])}; a young one is called a {rng.choice(['foal', 'kitten', 'puppy', 'kit', 'chick'])}."])


def author(rng, n):
    name, (city, region) = _person(rng), rng.choice(CITIES)
    born = rng.randint(1760, 1960)
    novel = f"The {rng.choice(['Silent', 'Northern', 'Last', 'Iron', 'Distant', 'Winter'])} {rng.choice(['Harbour', 'Orchard', 'Voyage', 'Estate', 'Lantern', 'Whale'])}"
    return ("books", f"authors/{_slug(name)}-{n}", f"{name} biography",
            f"{name} ({born}-{born + rng.randint(35, 90)}) was a novelist best known for {novel}.",
            [_facts([("Born", f"{_date(rng, born, born)}, {city}, {region}"), ("Notable work", novel),
                      ("First book", f"{rng.choice(['Tidewater', 'Marrow', 'Saltmarsh', 'Ledger'])} ({born + rng.randint(20, 40)})"), ("Genre", rng.choice(['sea story', 'novel of manners', 'gothic novel', 'satire']))]),
             f"Life: {name.split()[-1]} worked as a {rng.choice(['customs clerk', 'schoolteacher', 'sailor on a whaling ship', 'journalist'])} before publishing.",
             f"Work: {novel} sold poorly at first; its heroine, {_person(rng)}, is now widely studied."])


def fabric(rng, n):
    fabric = rng.choice(["linen", "silk", "polyester", "rayon", "cashmere", "denim", "nylon", "bamboo fabric"])
    return ("style", f"fabric-care/{_slug(fabric)}-{n}", f"How to wash {fabric}: care guide {n % 97 + 1}",
            f"Wash {fabric} at {rng.choice([20, 30, 40])} °C and {rng.choice(['dry flat', 'line dry', 'tumble dry low'])}.",
            [_facts([("Water", f"{rng.choice([20, 30, 40, 60])} °C"), ("Dryer", rng.choice(['no', 'low heat only', 'yes'])),
                      ("Iron", rng.choice(['cool', 'medium', 'hot']))]),
             f"Why it shrinks: heat relaxes fibres stretched during spinning, so {fabric} can shrink by {rng.randint(1, 8)} percent.",
             f"Stains: treat with {rng.choice(['cold water', 'mild detergent', 'vinegar', 'enzyme cleaner'])} before washing."])


def game(rng, n):
    name = _person(rng)
    game = rng.choice(["chess", "go", "draughts", "shogi", "backgammon", "xiangqi"])
    y = rng.randint(1900, 2015)
    return ("games", f"players/{_slug(name)}-{n}", f"{name}, {game} champion",
            f"{name} held the world {game} title from {y} to {y + rng.randint(1, 15)}.",
            [_facts([("Game", game), ("Title", f"World champion {y}-{y + rng.randint(1, 15)}"),
                      ("Nationality", rng.choice(['Norwegian', 'Russian', 'Dutch', 'Japanese', 'Indian', 'Hungarian']))]),
             f"Career: {name.split()[-1]} won the title from {_person(rng)} and lost a match to the computer {rng.choice(['Deep Thought', 'Hydra', 'AlphaZero', 'Stockfish'])} in {rng.randint(1985, 2020)}.",
             f"Rules: in {game} each side starts with {rng.randint(9, 20)} pieces; a piece may move {rng.choice(['diagonally', 'in an L shape', 'along ranks and files'])}."])


KINDS = [astronaut, mission, rocket, telescope, volcano, city, drink, plant, animal, author, fabric, game]


def distractor_pages(n: int, seed: int = 46) -> list[dict]:
    """n pages, kinds in turn, each from its own seeded generator (page i is the same page
    whatever n is)."""
    pages = []
    for i in range(n):
        rng = random.Random(f"{seed}/{i}")
        site, path, title, lead, paragraphs = KINDS[i % len(KINDS)](rng, i)
        pages.append(_page(title, f"https://{site}.crag-mm-mini.example/{path}", lead, *paragraphs))
    return pages
