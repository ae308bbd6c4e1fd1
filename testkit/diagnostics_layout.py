"""A dataset in CRAG-MM-Diagnostics' published layout (McGill-NLP/crag-mm-diagnostics'
data_loader.py: flat rows `id`, `question`, `answer`, `image`, `metadata` with the target's box,
name, Wikipedia page and referring-expression category; the hub's `data/test-*.parquet` naming).
Each photo holds a red object on the left and the blue target on the right.
"""
from __future__ import annotations

from PIL import Image

TARGET = "Blue heron"
SIZE = (200, 100)  # the photos' width and height; the target fills the right half
TARGET_BOX = [100.0, 0.0, 200.0, 100.0]


def photo() -> Image.Image:
    """A red object on the left, the blue target on the right."""
    image = Image.new("RGB", SIZE, (220, 30, 30))
    image.paste((30, 30, 220), (100, 0, 200, 100))
    return image


def write_published_layout(folder, rows: int = 4):
    """The layout data_loader.py reads: `load_dataset(path)["test"]`, then per row `row["id"]`,
    `row["question"]`, `row["answer"]`, `row["image"]`, `row["metadata"][...]`."""
    import datasets
    from datasets import Features, List, Value
    from datasets import Image as ImageFeature

    metadata = {"target_roi_bbox": List(Value("float64")), "image_size": List(Value("int64")),
                "target_object_name": Value("string"), "wikipedia_url": Value("string"),
                "referring_expression_category": Value("string"), "disambiguated_question": Value("string"),
                "textual_only_question": Value("string")}
    features = Features({"id": Value("string"), "question": Value("string"), "answer": Value("string"),
                         "image": ImageFeature(), "image_url": Value("string"), "metadata": metadata})
    categories = ["not enough cue (ambiguous)", "spatial"]
    data = [{"id": f"d{i}", "question": "what is the animal on the right?", "answer": TARGET, "image": photo(),
             "image_url": f"https://images.example/d{i}.jpg",
             "metadata": {"target_roi_bbox": TARGET_BOX, "image_size": list(SIZE), "target_object_name": TARGET,
                          "wikipedia_url": "https://en.wikipedia.org/wiki/Great_blue_heron",
                          "referring_expression_category": categories[i % 2],
                          "disambiguated_question": "what is the blue animal on the right?",
                          "textual_only_question": f"what is the {TARGET}?"}}
            for i in range(rows)]
    (folder / "data").mkdir(parents=True)
    datasets.Dataset.from_list(data, features=features).to_parquet(str(folder / "data" / "test-00000-of-00001.parquet"))
    return folder
