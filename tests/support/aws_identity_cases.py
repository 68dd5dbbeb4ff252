"""Conformance cases of the AWS plugin's identity types (IAM) against moto, one ``Case`` per type.

Built with ``support.aws_conformance.aws_case`` like the other AWS types: three Pkl variants (base, an
in-place change, a create-only change), the properties each reads back as, and how boto3 changes and
deletes the resource behind svc's back. Where moto lacks an IAM call the case says which, and its
in-place variant changes nothing that call would be needed for.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from support.aws import boto_client
from support.aws_conformance import aws_case, tags
from svc.plugins.conformance import Case

Json = dict[str, Any]

TRUST = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"},
                                                 "Action": "sts:AssumeRole"}]}
READ_OBJECTS = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*"}]}
DENY_ALL = {"Version": "2012-10-17", "Statement": [{"Effect": "Deny", "Action": "*", "Resource": "*"}]}
LIST_BUCKETS = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:ListBucket",
                                                        "Resource": "*"}]}


def compact_json(document: Json) -> str:
    """A document as the plugin reads it back (and as ``aws.jsonText`` renders a Pkl object): compact JSON."""
    return json.dumps(document, separators=(",", ":"))


def pkl_text(text: str) -> str:
    """``text`` as a Pkl string literal (JSON's escapes for quotes, backslashes and newlines are Pkl's too)."""
    return json.dumps(text, ensure_ascii=False)


def saml_metadata(location: str) -> str:
    """SAML metadata as IAM takes it (1,000 characters or more), its sign-on URL at ``location``."""
    document = ("<?xml version='1.0'?><md:EntityDescriptor xmlns:md='urn:oasis:names:tc:SAML:2.0:metadata' "
                "entityID='https://idp.example.com/metadata'><md:IDPSSODescriptor "
                "protocolSupportEnumeration='urn:oasis:names:tc:SAML:2.0:protocol'><md:SingleSignOnService "
                "Binding='urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect' "
                f"Location='{location}'/></md:IDPSSODescriptor></md:EntityDescriptor>")
    return document + "<!--" + "padding " * 120 + "-->"


def _strip_role(iam: Any, name: str) -> None:
    for policy in iam.list_role_policies(RoleName=name)["PolicyNames"]:
        iam.delete_role_policy(RoleName=name, PolicyName=policy)
    for policy in iam.list_attached_role_policies(RoleName=name)["AttachedPolicies"]:
        iam.detach_role_policy(RoleName=name, PolicyArn=policy["PolicyArn"])
    iam.delete_role(RoleName=name)


def iam_role(url: str, run: str) -> Case:
    iam = boto_client(url, "iam")

    def role(name: str, more: str) -> str:
        return (f'new role.Role {{ label = "subject"; roleName = "{name}"; '
                f'assumeRolePolicyDocument = {pkl_text(json.dumps(TRUST, indent=2))}; {more} }}')  # spaced: compared as JSON

    inline = f'policies {{ new {{ policyName = "read"; policyDocument = {pkl_text(json.dumps(READ_OBJECTS))} }} }}'
    updated = (f'description = "app v2"; maxSessionDuration = 7200; {inline}; '
               'tags { new { key = "team"; value = "edge" } }')

    def change(name: str) -> Json:
        iam.tag_role(RoleName=name, Tags=[{"Key": "oob", "Value": "yes"}])
        return {"Tags": tags(team="edge", oob="yes")}

    return aws_case(url, "aws-iam-role", "AWS::IAM::Role", ["iam/role"], {
        "base": role(f"{run}-app", 'description = "app"; tags { new { key = "team"; value = "core" } }'),
        "update": role(f"{run}-app", updated),
        "replace": role(f"{run}-app2", updated),
    }, {
        "base": {"RoleName": f"{run}-app", "Description": "app", "MaxSessionDuration": 3600, "Path": "/",
                 "AssumeRolePolicyDocument": compact_json(TRUST), "Tags": tags(team="core")},
        "update": {"RoleName": f"{run}-app", "Description": "app v2", "MaxSessionDuration": 7200,
                   "Policies": [{"PolicyName": "read", "PolicyDocument": READ_OBJECTS}], "Tags": tags(team="edge")},
        "replace": {"RoleName": f"{run}-app2", "Description": "app v2"},
    }, change, lambda name: _strip_role(iam, name))


def iam_managed_policy(url: str, run: str) -> Case:
    """Attached to a role of the same forma (``roles { app.res.roleName }``), a reference in a listing."""
    iam = boto_client(url, "iam")
    setup = (f'local app = new role.Role {{ label = "app"; roleName = "{run}-holder"; '
             f'assumeRolePolicyDocument = {pkl_text(json.dumps(TRUST))} }}\napp\n')

    def policy(name: str, document: Json) -> str:
        return (f'new managedpolicy.ManagedPolicy {{ label = "subject"; managedPolicyName = "{name}"; '
                f'description = "reads"; policyDocument = {pkl_text(json.dumps(document))}; '
                'roles { app.res.roleName } }')

    def change(arn: str) -> Json:
        iam.create_policy_version(PolicyArn=arn, PolicyDocument=json.dumps(DENY_ALL), SetAsDefault=True)
        return {"PolicyDocument": compact_json(DENY_ALL)}

    def delete(arn: str) -> None:
        for entity in iam.list_entities_for_policy(PolicyArn=arn)["PolicyRoles"]:
            iam.detach_role_policy(RoleName=entity["RoleName"], PolicyArn=arn)
        for version in iam.list_policy_versions(PolicyArn=arn)["Versions"]:
            if not version["IsDefaultVersion"]:
                iam.delete_policy_version(PolicyArn=arn, VersionId=version["VersionId"])
        iam.delete_policy(PolicyArn=arn)

    return aws_case(url, "aws-iam-managedpolicy", "AWS::IAM::ManagedPolicy", ["iam/role", "iam/managedpolicy"], {
        "base": policy(f"{run}-read", READ_OBJECTS),
        "update": policy(f"{run}-read", LIST_BUCKETS),
        "replace": policy(f"{run}-read2", LIST_BUCKETS),
    }, {
        "base": {"ManagedPolicyName": f"{run}-read", "Description": "reads", "Path": "/",
                 "PolicyDocument": compact_json(READ_OBJECTS)},  # the inventory keeps Roles as a reference
        "update": {"ManagedPolicyName": f"{run}-read", "PolicyDocument": compact_json(LIST_BUCKETS)},
        "replace": {"ManagedPolicyName": f"{run}-read2", "PolicyDocument": compact_json(LIST_BUCKETS),
                    "Roles": [f"{run}-holder"]},  # as the plugin reads it: attached to the setup's role
    }, change, delete, setup=setup)


def iam_group(url: str, run: str) -> Case:
    """moto's UpdateGroup changes the path only along with the name: the in-place change is of policies."""
    iam = boto_client(url, "iam")
    inline = f'policies {{ new {{ policyName = "read"; policyDocument = {pkl_text(json.dumps(READ_OBJECTS))} }} }}'
    read = {"PolicyName": "read", "PolicyDocument": READ_OBJECTS}

    def change(name: str) -> Json:
        iam.put_group_policy(GroupName=name, PolicyName="by-hand", PolicyDocument=json.dumps(DENY_ALL))
        return {"Policies": [{"PolicyName": "by-hand", "PolicyDocument": DENY_ALL}, read]}

    def delete(name: str) -> None:
        for policy in iam.list_group_policies(GroupName=name)["PolicyNames"]:
            iam.delete_group_policy(GroupName=name, PolicyName=policy)
        iam.delete_group(GroupName=name)

    return aws_case(url, "aws-iam-group", "AWS::IAM::Group", ["iam/group"], {
        "base": f'new group.Group {{ label = "subject"; groupName = "{run}-ops"; path = "/ops/" }}',
        "update": f'new group.Group {{ label = "subject"; groupName = "{run}-ops"; path = "/ops/"; {inline} }}',
        "replace": f'new group.Group {{ label = "subject"; groupName = "{run}-ops2"; path = "/ops/"; {inline} }}',
    }, {
        "base": {"GroupName": f"{run}-ops", "Path": "/ops/"},
        "update": {"GroupName": f"{run}-ops", "Path": "/ops/", "Policies": [read]},
        "replace": {"GroupName": f"{run}-ops2", "Policies": [read]},
    }, change, delete)


def iam_oidc_provider(url: str, run: str) -> Case:
    """moto has no AddClientIDToOpenIDConnectProvider: the in-place change is of thumbprints and tags."""
    iam = boto_client(url, "iam")

    def provider(host: str, thumbprint: str, more: str = "") -> str:
        return (f'new oidcprovider.OIDCProvider {{ label = "subject"; url = "https://{host}"; '
                f'clientIdList {{ "sts.amazonaws.com" }}; thumbprintList {{ "{thumbprint}" }}; {more} }}')

    def change(arn: str) -> Json:
        iam.update_open_id_connect_provider_thumbprint(OpenIDConnectProviderArn=arn, ThumbprintList=["c" * 40])
        return {"ThumbprintList": ["c" * 40]}

    tagged = 'tags { new { key = "team"; value = "core" } }'
    return aws_case(url, "aws-iam-oidcprovider", "AWS::IAM::OIDCProvider", ["iam/oidcprovider"], {
        "base": provider(f"{run}.example.com", "a" * 40),
        "update": provider(f"{run}.example.com", "b" * 40, tagged),
        "replace": provider(f"{run}-2.example.com", "b" * 40, tagged),
    }, {
        "base": {"Url": f"https://{run}.example.com", "ClientIdList": ["sts.amazonaws.com"],
                 "ThumbprintList": ["a" * 40]},
        "update": {"ThumbprintList": ["b" * 40], "Tags": tags(team="core")},
        "replace": {"Url": f"https://{run}-2.example.com", "ThumbprintList": ["b" * 40]},
    }, change, lambda arn: iam.delete_open_id_connect_provider(OpenIDConnectProviderArn=arn))


def iam_saml_provider(url: str, run: str) -> Case:
    """moto has no TagSAMLProvider (and GetSAMLProvider answers without tags): the case uses no tags."""
    iam = boto_client(url, "iam")

    def provider(name: str, location: str) -> str:
        return (f'new samlprovider.SAMLProvider {{ label = "subject"; name = "{name}"; '
                f'samlMetadataDocument = {pkl_text(saml_metadata(location))} }}')

    def change(arn: str) -> Json:
        document = saml_metadata("https://idp.example.com/by-hand")
        iam.update_saml_provider(SAMLProviderArn=arn, SAMLMetadataDocument=document)
        return {"SamlMetadataDocument": document}

    return aws_case(url, "aws-iam-samlprovider", "AWS::IAM::SAMLProvider", ["iam/samlprovider"], {
        "base": provider(f"{run}-idp", "https://idp.example.com/sso"),
        "update": provider(f"{run}-idp", "https://idp.example.com/sso2"),
        "replace": provider(f"{run}-idp2", "https://idp.example.com/sso2"),
    }, {
        "base": {"Name": f"{run}-idp", "SamlMetadataDocument": saml_metadata("https://idp.example.com/sso")},
        "update": {"Name": f"{run}-idp", "SamlMetadataDocument": saml_metadata("https://idp.example.com/sso2")},
        "replace": {"Name": f"{run}-idp2"},
    }, change, lambda arn: iam.delete_saml_provider(SAMLProviderArn=arn))


CERTIFICATE = "-----BEGIN CERTIFICATE-----\nMIIB...certificate...\n-----END CERTIFICATE-----"
CHAIN = "-----BEGIN CERTIFICATE-----\nMIIB...intermediate...\n-----END CERTIFICATE-----"


def private_key(run: str) -> str:
    """A key text unique to the run, so a test can look for it anywhere it must not be."""
    return f"-----BEGIN PRIVATE KEY-----\nkey-of-{run}\n-----END PRIVATE KEY-----"


def iam_server_certificate(url: str, run: str) -> Case:
    """moto has no UpdateServerCertificate or TagServerCertificate, the only in-place changes IAM allows:
    the case's in-place variant equals its base. Out of band, the certificate is uploaded again with
    another chain (a create-only field), which the forced re-apply then replaces."""
    iam = boto_client(url, "iam")

    def certificate(name: str) -> str:
        return (f'new servercertificate.ServerCertificate {{ label = "subject"; serverCertificateName = "{name}"; '
                f'certificateBody = {pkl_text(CERTIFICATE)}; privateKey = {pkl_text(private_key(run))} }}')

    def change(name: str) -> Json:
        iam.delete_server_certificate(ServerCertificateName=name)
        iam.upload_server_certificate(ServerCertificateName=name, CertificateBody=CERTIFICATE,
                                      CertificateChain=CHAIN, PrivateKey="another key")
        return {"CertificateChain": CHAIN}

    return aws_case(url, "aws-iam-servercertificate", "AWS::IAM::ServerCertificate", ["iam/servercertificate"], {
        "base": certificate(f"{run}-tls"),
        "update": certificate(f"{run}-tls"),
        "replace": certificate(f"{run}-tls2"),
    }, {
        "base": {"ServerCertificateName": f"{run}-tls", "CertificateBody": CERTIFICATE, "Path": "/"},
        "update": {"ServerCertificateName": f"{run}-tls", "CertificateBody": CERTIFICATE},
        "replace": {"ServerCertificateName": f"{run}-tls2", "CertificateBody": CERTIFICATE},
    }, change, lambda name: iam.delete_server_certificate(ServerCertificateName=name))


IDENTITY_CASES: dict[str, Callable[[str, str], Case]] = {
    "iam-role": iam_role, "iam-managedpolicy": iam_managed_policy, "iam-group": iam_group,
    "iam-oidcprovider": iam_oidc_provider, "iam-samlprovider": iam_saml_provider,
    "iam-servercertificate": iam_server_certificate,
}
