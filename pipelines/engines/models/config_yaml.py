"""Model configs read from YAML: one file per model under configs/models/, bounded in size,
nesting and every number (store/yaml_file.py, the fields' limits) and validated by the
schema (model_schema.py); a bad file is one error naming the file and the field.

Sweep entries (`configs/models/*.yaml`) are the 45+ real models; `configs/models/local/`
holds CPU-runnable entries (baselines, tiny random models) that carry `local: true` and are
kept out of that count.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import ValidationError

from pipelines.engines.models.model_schema import ModelConfig, ModelConfigError
from store.yaml_file import YAMLBoundError, load_bounded

CONFIG_DIR = Path(__file__).resolve().parents[3] / "configs" / "models"


def load_config(path: Path) -> ModelConfig:
    """One config file, validated; a bad file is a ModelConfigError naming path and field."""
    try:
        data = load_bounded(path)
        return ModelConfig.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "(root)"
        raise ModelConfigError(f"{path}: field {field}: {first['msg']}") from err
    except (OSError, yaml.YAMLError, YAMLBoundError) as err:
        raise ModelConfigError(f"{path}: {err}") from err
    except UnicodeDecodeError as err:
        raise ModelConfigError(f"{path} is not UTF-8 text (byte {err.start})") from err


def load_configs(folder: Path) -> list[ModelConfig]:
    """Every `*.yaml` under `folder` (recursively), sorted by name.

    The file stem must equal `name` and names must be unique, so `--only NAME` and result
    directories can never point at two models.
    """
    if not folder.is_dir():
        raise ModelConfigError(f"{folder} is not a directory of model configs")
    configs: dict[str, tuple[Path, ModelConfig]] = {}
    for path in sorted(folder.rglob("*.y*ml")):
        cfg = load_config(path)
        if cfg.name != path.stem:
            raise ModelConfigError(f"{path}: field name: {cfg.name!r} differs from the file stem")
        if cfg.name in configs:
            raise ModelConfigError(
                f"{path}: field name: {cfg.name!r} also in {configs[cfg.name][0]}"
            )
        configs[cfg.name] = (path, cfg)
    if not configs:
        raise ModelConfigError(f"{folder} holds no *.yaml model configs")
    return [configs[name][1] for name in sorted(configs)]
