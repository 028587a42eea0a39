"""GeoBuild messages as the round rows keep them: images by their sha256 (the images
themselves are stored once per problem), and back."""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from actors.contract import image_part


def without_images(message: dict[str, Any]) -> dict[str, Any]:
    """A message as stored between rounds: each image part by its sha256, not its bytes."""
    if isinstance(message["content"], str):  # a text-only model's message
        return message
    parts = []
    for part in message["content"]:
        if part.get("type") == "image_url":
            url = part["image_url"]["url"]
            png = _image_bytes(url)
            parts.append({"type": "image_url", "image_sha256": hashlib.sha256(png).hexdigest()})
        else:
            parts.append(part)
    return {"role": message["role"], "content": parts}


def with_images(message: dict[str, Any], images: dict[str, bytes]) -> dict[str, Any]:
    """A stored message with its images back (`images`: bytes by sha256)."""
    if isinstance(message["content"], str):
        return message
    parts = []
    for part in message["content"]:
        if part.get("type") == "image_url":
            parts.append(image_part(images[part["image_sha256"]]))
        else:
            parts.append(part)
    return {"role": message["role"], "content": parts}


def _image_bytes(url: str) -> bytes:
    """The bytes of a base64 data URL."""
    return base64.b64decode(url.partition("base64,")[2])
