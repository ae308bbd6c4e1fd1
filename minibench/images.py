"""The benchmark's pictures: photographs shipped inside installed PyPI packages, and drawings.

Every picture is returned as JPEG bytes (long side <= 384 px, fixed quality), so the dataset
builder and the index builder see byte-identical images: the index embeds exactly the image
the evaluator will later decode from the parquet file.
"""
from __future__ import annotations

import io
from functools import lru_cache
from pathlib import Path

from PIL import Image, ImageDraw, ImageEnhance, ImageFilter, ImageFont, ImageOps

MAX_SIDE = 384
JPEG_QUALITY = 80


def _package_dir(package: str) -> Path:
    # find_spec locates a top-level package without importing it (importing sklearn is slow).
    import importlib.util

    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"package {package!r} is not installed; the benchmark's photographs ship in it")
    return Path(spec.submodule_search_locations[0])


def _skimage(name: str) -> Image.Image:
    # Only files that ship in the wheel's skimage/data folder (no pooch download).
    return Image.open(_package_dir("skimage") / "data" / name)


def _sklearn(name: str) -> Image.Image:
    return Image.open(_package_dir("sklearn") / "datasets" / "images" / name)


def _font(size: int) -> ImageFont.FreeTypeFont:
    return ImageFont.load_default(size=size)


def _canvas(w: int, h: int, color: str) -> tuple[Image.Image, ImageDraw.ImageDraw]:
    img = Image.new("RGB", (w, h), color)
    return img, ImageDraw.Draw(img)


def _lines(draw, lines, x, y, size, fill="black", gap=8):
    for text in lines:
        draw.text((x, y), text, font=_font(size), fill=fill)
        y += size + gap


# --- drawings -----------------------------------------------------------------------------

def street_sign() -> Image.Image:
    img, d = _canvas(384, 288, "#87a9c9")  # sky
    d.rectangle([186, 60, 198, 288], fill="#555555")  # pole
    d.rounded_rectangle([40, 40, 344, 96], 8, fill="#1f6e3a", outline="white", width=3)
    d.text((70, 50), "ELM ST", font=_font(34), fill="white")
    d.rounded_rectangle([60, 110, 324, 166], 8, fill="#1f6e3a", outline="white", width=3)
    d.text((90, 120), "5TH AVE", font=_font(34), fill="white")
    d.rectangle([0, 250, 384, 288], fill="#444444")  # street
    return img


def bus_stop() -> Image.Image:
    img, d = _canvas(288, 384, "#d9d9d9")
    d.rectangle([136, 150, 152, 384], fill="#666666")
    d.rounded_rectangle([24, 16, 264, 250], 10, fill="#c8102e", outline="white", width=4)
    d.ellipse([104, 26, 184, 78], fill="white")
    d.text((124, 36), "BUS", font=_font(24), fill="#c8102e")
    _lines(d, ["ROUTE 42", "Downtown via Main St", "Every 15 min", "6:00 am - 11:00 pm"],
           40, 92, 20, fill="white", gap=10)
    d.rectangle([40, 208, 248, 240], fill="black")
    d.text((50, 212), "NEXT BUS: 4 MIN", font=_font(20), fill="#ffb000")
    return img


def shelf_labels() -> Image.Image:
    img, d = _canvas(384, 256, "#f2f2f2")
    for i, (name, size, price, unit) in enumerate([
        ("OAT MILK", "1 L", "$3.49", "$3.49 / L"),
        ("ALMOND MILK", "1.5 L", "$3.99", "$2.66 / L"),
    ]):
        y = 20 + i * 118
        d.rectangle([16, y, 368, y + 100], fill="white", outline="#ffcc00", width=5)
        d.text((30, y + 10), f"{name} {size}", font=_font(24), fill="black")
        d.text((30, y + 48), price, font=_font(36), fill="#c00000")
        d.text((210, y + 60), f"unit {unit}", font=_font(16), fill="#333333")
    return img


def book_cover(title: list[str], author: str, bg: str, fg: str) -> Image.Image:
    img, d = _canvas(256, 384, bg)
    d.rectangle([14, 14, 242, 370], outline=fg, width=3)
    _lines(d, title, 30, 80, 30, fill=fg, gap=12)
    d.line([30, 250, 226, 250], fill=fg, width=2)
    d.text((30, 270), author, font=_font(22), fill=fg)
    return img


def whiteboard() -> Image.Image:
    img, d = _canvas(384, 256, "#fbfbf8")
    d.rectangle([0, 0, 383, 255], outline="#9a9a9a", width=8)
    d.text((40, 50), "Solve for x:", font=_font(26), fill="#1a3c8c")
    d.text((60, 110), "2x + 6 = 14", font=_font(44), fill="#1a3c8c")
    d.text((40, 190), "Area of a circle: A = pi x r^2", font=_font(20), fill="#b01010")
    return img


def cafe_menu() -> Image.Image:
    img, d = _canvas(288, 384, "#2b2b2b")
    d.text((70, 16), "CAFE LUNA", font=_font(30), fill="#f5e6c8")
    items = [("Espresso", "2.75"), ("Cappuccino", "4.25"), ("Latte", "4.50"),
             ("Hot chocolate", "3.75"), ("Croissant", "3.25"), ("Bagel", "2.50")]
    for i, (name, price) in enumerate(items):
        y = 76 + i * 46
        d.text((24, y), name, font=_font(22), fill="white")
        d.text((206, y), f"${price}", font=_font(22), fill="white")
    return img


def care_label() -> Image.Image:
    img, d = _canvas(224, 320, "white")
    d.rectangle([8, 8, 216, 312], outline="#888888", width=2)
    _lines(d, ["SIZE M", "100% COTTON", "MADE IN PORTUGAL", "MACHINE WASH", "COLD 30\u00b0C",
               "DO NOT BLEACH", "DO NOT", "TUMBLE DRY"], 24, 20, 20, gap=14)
    return img


def chessboard() -> Image.Image:
    img, d = _canvas(320, 320, "#6b4a2b")
    cell = 36
    for r in range(8):
        for c in range(8):
            color = "#f0d9b5" if (r + c) % 2 == 0 else "#b58863"
            d.rectangle([16 + c * cell, 16 + r * cell, 16 + (c + 1) * cell, 16 + (r + 1) * cell], fill=color)
    return img


def scoreboard() -> Image.Image:
    img, d = _canvas(384, 224, "#101010")
    d.text((40, 20), "HOME", font=_font(30), fill="#ffcc00")
    d.text((250, 20), "AWAY", font=_font(30), fill="#ffcc00")
    d.text((60, 70), "3", font=_font(72), fill="#ff3030")
    d.text((270, 70), "1", font=_font(72), fill="#ff3030")
    d.text((130, 170), "PERIOD 2  12:41", font=_font(22), fill="white")
    return img


def seed_packet() -> Image.Image:
    img, d = _canvas(256, 384, "#fdf3dc")
    d.rectangle([0, 0, 256, 70], fill="#b3261e")
    d.text((20, 16), "TOMATO", font=_font(34), fill="white")
    d.ellipse([70, 90, 186, 200], fill="#d62d20")
    d.polygon([(128, 84), (112, 100), (144, 100)], fill="#2e7d32")
    _lines(d, ["'San Marzano'", "Sow indoors 6-8 weeks", "before last frost", "Harvest: 80 days",
               "Net wt 0.3 g"], 20, 214, 18, gap=7)
    return img


def parking_sign() -> Image.Image:
    img, d = _canvas(256, 384, "#1b2433")
    d.rectangle([124, 200, 134, 384], fill="#777777")
    d.rectangle([48, 24, 208, 216], fill="white", outline="#c00000", width=4)
    d.text((112, 30), "P", font=_font(56), fill="#0b4ea2")
    _lines(d, ["2 HOUR", "PARKING", "8 AM - 6 PM", "MON - SAT"], 64, 100, 20, fill="#0b4ea2", gap=6)
    return img


# --- degradations (the dataset's image_quality values) ------------------------------------

def low_light(img: Image.Image) -> Image.Image:
    return ImageEnhance.Brightness(img).enhance(0.35)


def blurred(img: Image.Image) -> Image.Image:
    return img.filter(ImageFilter.GaussianBlur(2.5))


def truncated(img: Image.Image) -> Image.Image:
    w, h = img.size
    return img.crop((0, 0, int(w * 0.8), h))


def rotated(img: Image.Image) -> Image.Image:
    return img.rotate(12, expand=True, fillcolor="#808080")


# Hard negatives for the image KG: look-alike copies of the benchmark pictures.
def mirrored(img: Image.Image) -> Image.Image:
    return ImageOps.mirror(img)


def warm_tint(img: Image.Image) -> Image.Image:
    r, g, b = img.convert("RGB").split()
    return Image.merge("RGB", (r.point(lambda v: min(255, int(v * 1.15))), g, b.point(lambda v: int(v * 0.8))))


def center_crop(img: Image.Image) -> Image.Image:
    w, h = img.size
    return img.crop((w // 8, h // 8, w - w // 8, h - h // 8))


SOURCES = {
    # photographs (licences in data/crag-mm-mini/LICENSES.md)
    "coffee": lambda: _skimage("coffee.png"),
    "chelsea": lambda: _skimage("chelsea.png"),
    "astronaut": lambda: _skimage("astronaut.png"),
    "rocket": lambda: _skimage("rocket.jpg"),
    "motorcycle": lambda: _skimage("motorcycle_left.png"),
    "coins": lambda: _skimage("coins.png"),
    "camera": lambda: _skimage("camera.png"),
    "hubble": lambda: _skimage("hubble_deep_field.jpg"),
    "moon": lambda: _skimage("moon.png"),
    "horse": lambda: _skimage("horse.png"),
    "page": lambda: _skimage("page.png"),
    "clock": lambda: _skimage("clock_motion.png"),
    "brick": lambda: _skimage("brick.png"),
    "gravel": lambda: _skimage("gravel.png"),
    "grass": lambda: _skimage("grass.png"),
    "color_wheel": lambda: _skimage("color.png"),
    "china": lambda: _sklearn("china.jpg"),
    "flower": lambda: _sklearn("flower.jpg"),
    # drawings
    "street_sign": street_sign,
    "bus_stop": bus_stop,
    "shelf_labels": shelf_labels,
    "pride_cover": lambda: book_cover(["Pride and", "Prejudice"], "JANE AUSTEN", "#e9dcc3", "#4a2c1a"),
    "sense_cover": lambda: book_cover(["Sense and", "Sensibility"], "JANE AUSTEN", "#dfe6d0", "#2c4a1a"),
    "moby_cover": lambda: book_cover(["Moby-Dick", "or, The Whale"], "HERMAN MELVILLE", "#123a5c", "#f0f0f0"),
    "whiteboard": whiteboard,
    "cafe_menu": cafe_menu,
    "care_label": care_label,
    "chessboard": chessboard,
    "scoreboard": scoreboard,
    "seed_packet": seed_packet,
    "parking_sign": parking_sign,
}

TRANSFORMS = {"low light": low_light, "blurred": blurred, "truncated": truncated, "rotated": rotated,
              "mirrored": mirrored, "warm tint": warm_tint, "center crop": center_crop}


def _to_jpeg(img: Image.Image) -> bytes:
    img = img.convert("RGB")
    img.thumbnail((MAX_SIDE, MAX_SIDE), Image.Resampling.LANCZOS)
    buf = io.BytesIO()
    img.save(buf, format="JPEG", quality=JPEG_QUALITY, optimize=False, progressive=False)
    return buf.getvalue()


def composed(left: bytes, right: bytes) -> tuple[bytes, list[list[int]]]:
    """Two pictures side by side on a grey canvas, each fitted into its half, and each one's box
    [x1, y1, x2, y2] in the composed picture's pixels."""
    half = MAX_SIDE // 2
    canvas = Image.new("RGB", (MAX_SIDE, half), "#808080")
    boxes = []
    for n, data in enumerate((left, right)):
        img = Image.open(io.BytesIO(data)).convert("RGB")
        img.thumbnail((half, half), Image.Resampling.LANCZOS)
        x, y = n * half + (half - img.width) // 2, (half - img.height) // 2
        canvas.paste(img, (x, y))
        boxes.append([x, y, x + img.width, y + img.height])
    return _to_jpeg(canvas), boxes


@lru_cache(maxsize=None)
def image_bytes(source: str, transform: str | None = None) -> bytes:
    """JPEG bytes of one picture, optionally degraded/altered (`transform` from TRANSFORMS)."""
    img = SOURCES[source]().convert("RGB")
    img.thumbnail((MAX_SIDE, MAX_SIDE), Image.Resampling.LANCZOS)
    if transform:
        img = TRANSFORMS[transform](img)
    return _to_jpeg(img)
