"""The AWS plugin's generated files are what the generator makes from the pinned registry, byte for byte."""

from __future__ import annotations

import unicodedata

import pytest
from svc_plugin_aws_gen.handwritten import HAND_WRITTEN
from svc_plugin_aws_gen.outputs import CONFIG_MODULE, SCHEMA_DIR, TYPES_PAGE, Generated, generate
from svc_plugin_aws_gen.registry import load_registry


@pytest.fixture(scope="module")
def generated() -> Generated:
    return generate()


def test_the_committed_files_are_what_the_generator_makes_from_the_pinned_registry(generated: Generated) -> None:
    assert len(generated.files) == 1737 - len(HAND_WRITTEN) + 2  # the modules, the config module's type lists, the page
    assert {CONFIG_MODULE, TYPES_PAGE, SCHEMA_DIR / "ec2" / "instance.pkl"} <= generated.files.keys()
    differences = generated.differences()
    assert not differences, f"out of date (run .venv/bin/python -m svc_plugin_aws_gen generate): {differences[:5]}"


def test_the_output_does_not_depend_on_the_order_of_the_registry() -> None:
    sample = [s for s in load_registry() if s.service in ("EC2", "ApiGateway", "Amplify")]
    assert generate(sample).files == generate(list(reversed(sample))).files


def test_the_hand_written_modules_are_left_as_they_are(generated: Generated) -> None:
    for type_name in HAND_WRITTEN:
        _, service, resource = type_name.split("::")
        module = SCHEMA_DIR / service.lower() / f"{resource.lower()}.pkl"
        assert module.is_file() and module not in generated.files, type_name
    assert "| `AWS::S3::Bucket` | `@aws/s3/bucket.pkl` | native (boto3) | yes |" in generated.files[TYPES_PAGE]
    assert "| `AWS::EC2::Instance` | `@aws/ec2/instance.pkl` | Cloud Control | yes |" in generated.files[TYPES_PAGE]


def test_a_reference_may_stand_for_a_string_in_a_list_or_a_map(generated: Generated) -> None:
    """A service's subnets are other resources' ids (``subnetA.res.subnetId``), as a log option may be a group's
    name: string elements and map values take a resolvable, as string properties do."""
    service = generated.files[SCHEMA_DIR / "ecs" / "service.pkl"]
    assert "  subnets: (Listing<String | svc.Resolvable>)?\n" in service
    task = generated.files[SCHEMA_DIR / "ecs" / "taskdefinition.pkl"]
    assert "  options: (Mapping<String, String | svc.Resolvable>)?\n" in task


def test_no_generated_file_holds_a_control_character(generated: Generated) -> None:
    """A pattern's characters that are not printable (Security Hub's ``[^\\u0000-\\u007F]``: NUL and DEL) are written
    as escapes (``\\#u{0}``): raw, they made the module a binary file to git and to every text tool."""
    binary = sorted(str(path) for path, text in generated.files.items()
                    if any(unicodedata.category(char) == "Cc" and char not in "\n\t" for char in text))
    assert not binary, binary[:5]
    security_control = generated.files[SCHEMA_DIR / "securityhub" / "securitycontrol.pkl"]
    assert r'Regex(#"^([^\#u{0}-\#u{7F}]|[-_ a-zA-Z0-9])+$"#)' in security_control
