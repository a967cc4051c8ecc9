#!/usr/bin/env python3
"""Validates the Kubernetes manifests in kubernetes/ offline.

Three checks, each of which fails the run:
  1. Schema: every object against the Kubernetes OpenAPI schema with npm's
     kubernetes-models (validate_schema.mjs): types, required fields,
     formats.
  2. Unknown fields: every key of every object is a field of its Kubernetes
     type (the models of Debian's python3-kubernetes), so a misspelt field
     is an error instead of being dropped by the API server.
  3. Consistency: what the objects say of Tessera holds: each container's
     flags are flags of its binary (its --help), $(VAR)s are defined,
     mounts, ConfigMap keys, Secret files and Service ports resolve, the
     policy is a registered one, relative paths exist in the image's tree,
     the frontend has one replica, the backend asks for GPUs and mounts its
     MPS directory, the Prometheus scrape config parses, and the GPU compose
     file gives each backend GPUs of its own.

--self_test also checks that each check fails on a manifest broken on
purpose (a misspelt field, a wrong type, an unknown flag).

Usage: validate_manifests.py --root REPO --bin_dir BUILD/bin
           --node_modules DIR [--self_test]
"""

import argparse
import copy
import json
import os
import re
import subprocess
import sys
import tempfile

import yaml
from kubernetes.client import models as k8s_models

HERE = os.path.dirname(os.path.abspath(__file__))


def load_manifests(directory):
    """[(where, object)] of every YAML document but the kustomization."""
    out = []
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".yaml") or name == "kustomization.yaml":
            continue
        with open(os.path.join(directory, name)) as f:
            for i, doc in enumerate(yaml.safe_load_all(f)):
                if doc is not None:
                    out.append(("%s#%d" % (name, i), doc))
    return out


# --- 1. schema --------------------------------------------------------------


def schema_errors(objects, node_modules):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump([{"where": w, "object": o} for w, o in objects], f)
        path = f.name
    try:
        run = subprocess.run(
            ["node", os.path.join(HERE, "validate_schema.mjs"), node_modules,
             path],
            capture_output=True, text=True, timeout=120)
    finally:
        os.unlink(path)
    lines = run.stdout.splitlines()
    errors = [l for l in lines if l.startswith("FAIL")]
    if run.returncode != 0 and not errors:
        errors.append("schema validator failed: " + run.stderr.strip())
    return errors, len([l for l in lines if l.startswith("ok")])


# --- 2. unknown fields ------------------------------------------------------


def model_class(obj):
    version = obj.get("apiVersion", "").split("/")[-1]
    name = version[0].upper() + version[1:] + obj.get("kind", "")
    return getattr(k8s_models, name, None)


def unknown_fields(value, type_name, path, errors):
    m = re.fullmatch(r"list\[(.+)\]", type_name)
    if m:
        for i, item in enumerate(value or []):
            unknown_fields(item, m.group(1), "%s[%d]" % (path, i), errors)
        return
    m = re.fullmatch(r"dict\(str, (.+)\)", type_name)
    if m:
        for k, item in (value or {}).items():
            unknown_fields(item, m.group(1), "%s.%s" % (path, k), errors)
        return
    cls = getattr(k8s_models, type_name, None)
    if cls is None or not isinstance(value, dict):
        return  # a scalar, or int-or-string (object): the schema checks it
    by_key = {cls.attribute_map[a]: t for a, t in cls.openapi_types.items()}
    for key, item in value.items():
        if key not in by_key:
            errors.append("%s: unknown field '%s' (%s)" % (path, key, type_name))
        else:
            unknown_fields(item, by_key[key], "%s.%s" % (path, key), errors)


def field_errors(objects):
    errors = []
    for where, obj in objects:
        cls = model_class(obj)
        if cls is None:
            errors.append("%s: no model for %s %s" %
                          (where, obj.get("apiVersion"), obj.get("kind")))
            continue
        unknown_fields(obj, cls.__name__, where, errors)
    return errors


# --- 3. consistency ---------------------------------------------------------


def help_text(bin_dir, binary, cache):
    if binary not in cache:
        path = os.path.join(bin_dir, binary)
        if not os.access(path, os.X_OK):
            cache[binary] = None
        else:
            run = subprocess.run([path, "--help"], capture_output=True,
                                 text=True, timeout=60)
            cache[binary] = run.stdout + run.stderr
    return cache[binary]


def pod_templates(objects):
    for where, obj in objects:
        if obj.get("kind") in ("Deployment", "DaemonSet", "StatefulSet"):
            yield where, obj, obj["spec"]["template"]


def kustomize_files(root):
    with open(os.path.join(root, "kubernetes", "kustomization.yaml")) as f:
        k = yaml.safe_load(f)
    files = {}
    for gen in k.get("secretGenerator", []):
        files[gen["name"]] = [os.path.basename(p) for p in gen.get("files", [])]
    return k, files


def check_container(where, c, volumes, config_maps, secret_files, root,
                    bin_dir, helps, errors):
    args = c.get("args") or c.get("command") or []
    if not args:
        errors.append("%s: container %s runs nothing" % (where, c["name"]))
        return
    helptext = help_text(bin_dir, args[0], helps)
    if helptext is None:
        errors.append("%s: %s is not a Tessera binary" % (where, args[0]))
        helptext = ""
    env = {}
    for e in c.get("env", []):
        env[e["name"]] = e
        ref = e.get("valueFrom", {}).get("configMapKeyRef")
        if ref and ref["key"] not in config_maps.get(ref["name"], {}):
            errors.append("%s: env %s reads %s/%s, which no ConfigMap holds" %
                          (where, e["name"], ref["name"], ref["key"]))
    mounts = {m["mountPath"]: m["name"] for m in c.get("volumeMounts", [])}
    for name in mounts.values():
        if name not in volumes:
            errors.append("%s: mount of undefined volume %s" % (where, name))
    flags = {}
    for a in args[1:]:
        m = re.fullmatch(r"--([a-z0-9_]+)=(.*)", a)
        if not m:
            errors.append("%s: argument %r is not --flag=value" % (where, a))
            continue
        flag, value = m.groups()
        flags[flag] = value
        if helptext and ("--%s (" % flag) not in helptext:
            errors.append("%s: %s has no flag --%s" % (where, args[0], flag))
        for var in re.findall(r"\$\(([A-Z_]+)\)", value):
            if var not in env:
                errors.append("%s: --%s uses undefined $(%s)" %
                              (where, flag, var))
        if value.startswith("/"):
            mount = next((p for p in mounts if value.startswith(p + "/") or
                          value == p), None)
            if mount is None:
                errors.append("%s: --%s=%s is on no mounted volume" %
                              (where, flag, value))
            else:
                vol = volumes.get(mounts[mount], {})
                secret = vol.get("secret", {}).get("secretName")
                if secret and os.path.basename(value) not in secret_files.get(
                        secret, []):
                    errors.append("%s: --%s=%s: secret %s has no such file" %
                                  (where, flag, value, secret))
        elif flag in ("config", "model_repository", "profile_dir"):
            if not os.path.exists(os.path.join(root, value)):
                errors.append("%s: --%s=%s does not exist in the tree" %
                              (where, flag, value))
    ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
    for probe in ("readinessProbe", "livenessProbe"):
        port = c.get(probe, {}).get("httpGet", {}).get("port")
        if port is not None and port not in ports and port not in ports.values():
            errors.append("%s: %s on unknown port %s" % (where, probe, port))
    return flags, ports


def policy_names(bin_dir, helps):
    text = help_text(bin_dir, "tessera_frontend", helps) or ""
    m = re.search(r"Scheduling policies: (.*)", text)
    return set(m.group(1).split(", ")) if m else set()


def consistency_errors(objects, root, bin_dir):
    errors = []
    helps = {}
    kustomization, secret_files = kustomize_files(root)
    for r in kustomization.get("resources", []):
        if not os.path.exists(os.path.join(root, "kubernetes", r)):
            errors.append("kustomization: no resource file %s" % r)
    config_maps = {o["metadata"]["name"]: o.get("data", {})
                   for _, o in objects if o["kind"] == "ConfigMap"}
    frontend_cm = config_maps.get("tessera-frontend", {})
    if frontend_cm.get("policy") not in policy_names(bin_dir, helps):
        errors.append("ConfigMap tessera-frontend: unknown policy %r" %
                      frontend_cm.get("policy"))
    for entry in frontend_cm.get("backends", "").split(","):
        if not re.fullmatch(r"[\w.-]+=[\w.-]+:\d+", entry):
            errors.append("ConfigMap tessera-frontend: backend %r is not "
                          "NAME=HOST:PORT" % entry)
    labels_by_kind = {}
    for where, obj, template in pod_templates(objects):
        spec = template["spec"]
        volumes = {v["name"]: v for v in spec.get("volumes", [])}
        for v in volumes.values():
            secret = v.get("secret", {}).get("secretName")
            if secret and secret not in secret_files:
                errors.append("%s: secret %s is not generated" % (where, secret))
        labels = template["metadata"].get("labels", {})
        selector = obj["spec"]["selector"]["matchLabels"]
        if any(labels.get(k) != v for k, v in selector.items()):
            errors.append("%s: selector matches no pod of its template" % where)
        for c in spec["containers"]:
            got = check_container(where, c, volumes, config_maps, secret_files,
                                  root, bin_dir, helps, errors)
            if not got:
                continue
            flags, ports = got
            labels_by_kind[obj["kind"]] = (labels, ports, flags, c, spec)
            notes = template["metadata"].get("annotations", {})
            if notes.get("prometheus.io/scrape") == "true":
                port = int(notes.get("prometheus.io/port", "0"))
                http = flags.get("http_port")
                if str(port) != http or port not in ports.values():
                    errors.append("%s: scrape port %s is not the HTTP port %s"
                                  % (where, port, http))
    if "Deployment" in labels_by_kind:
        dep = next(o for _, o in objects if o["kind"] == "Deployment")
        if dep["spec"].get("replicas") != 1:
            errors.append("frontend Deployment: replicas must be 1")
    if "DaemonSet" in labels_by_kind:
        _, _, flags, c, spec = labels_by_kind["DaemonSet"]
        if "nvidia.com/gpu" not in c.get("resources", {}).get("limits", {}):
            errors.append("backend DaemonSet: no nvidia.com/gpu limit")
        mps = flags.get("mps_dir", "/tmp/tessera-mps")
        host_paths = {v["name"]: v["hostPath"]["path"]
                      for v in spec.get("volumes", []) if "hostPath" in v}
        mounted = {m["mountPath"]: m["name"] for m in c.get("volumeMounts", [])}
        if mounted.get(mps) not in host_paths:
            errors.append("backend DaemonSet: MPS directory %s is not a "
                          "hostPath mount" % mps)
        if not spec.get("hostIPC"):
            errors.append("backend DaemonSet: MPS needs hostIPC")
    for _, o in objects:
        if o["kind"] != "Service":
            continue
        selected = [v for v in labels_by_kind.values()
                    if all(v[0].get(k) == x
                           for k, x in o["spec"]["selector"].items())]
        if not selected:
            errors.append("Service %s selects no pod" % o["metadata"]["name"])
            continue
        ports = selected[0][1]
        for p in o["spec"]["ports"]:
            t = p.get("targetPort", p["port"])
            if t not in ports and t not in ports.values():
                errors.append("Service %s: target port %s is no container "
                              "port" % (o["metadata"]["name"], t))
    prom = config_maps.get("tessera-prometheus", {}).get("prometheus.yml")
    if prom is None:
        errors.append("no Prometheus scrape config")
    else:
        conf = yaml.safe_load(prom)
        jobs = conf.get("scrape_configs", [])
        if not jobs or any(j.get("scheme") != "https" for j in jobs):
            errors.append("Prometheus: every job must scrape over HTTPS")
        for j in jobs:
            ca = j.get("tls_config", {}).get("ca_file", "")
            if os.path.basename(ca) not in secret_files.get("tessera-secrets",
                                                            []):
                errors.append("Prometheus job %s: CA %s is not a secret file"
                              % (j.get("job_name"), ca))
    errors.extend(compose_gpu_errors(root))
    return errors


def compose_gpu_errors(root):
    path = os.path.join(root, "docker", "docker-compose.gpu.yml")
    with open(path) as f:
        compose = yaml.safe_load(f)
    seen = {}
    errors = []
    for name, service in compose.get("services", {}).items():
        devices = (service.get("deploy", {}).get("resources", {})
                   .get("reservations", {}).get("devices", []))
        for d in devices:
            if "count" in d:
                errors.append("%s: %s reserves GPUs by count, not by id" %
                              (path, name))
            for gpu in d.get("device_ids", []):
                if gpu in seen:
                    errors.append("%s: GPU %s given to %s and %s" %
                                  (path, gpu, seen[gpu], name))
                seen[gpu] = name
    return errors


# --- driver -----------------------------------------------------------------


def validate(objects, args):
    schema, ok = schema_errors(objects, args.node_modules)
    fields = field_errors(objects)
    consistency = consistency_errors(objects, args.root, args.bin_dir)
    return schema, fields, consistency, ok


def self_test(objects, args):
    """Each check must catch a manifest broken on purpose."""
    def container(objs, kind):
        for _, o in objs:
            if o["kind"] == kind:
                return o["spec"]["template"]["spec"]["containers"][0]
        raise AssertionError("no " + kind)

    failures = []
    broken = copy.deepcopy(objects)
    container(broken, "Deployment")["imagePullPolcy"] = "Always"
    if not any("imagePullPolcy" in e for e in field_errors(broken)):
        failures.append("a misspelt field was not caught")
    broken = copy.deepcopy(objects)
    next(o for _, o in broken if o["kind"] == "Deployment")["spec"][
        "replicas"] = "1"
    if not schema_errors(broken, args.node_modules)[0]:
        failures.append("a string replica count was not caught")
    broken = copy.deepcopy(objects)
    container(broken, "DaemonSet")["args"].append("--mps_dri=/x")
    if not any("--mps_dri" in e
               for e in consistency_errors(broken, args.root, args.bin_dir)):
        failures.append("an unknown flag was not caught")
    return failures


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--root", required=True)
    p.add_argument("--bin_dir", required=True)
    p.add_argument("--node_modules", required=True)
    p.add_argument("--self_test", action="store_true")
    args = p.parse_args()
    objects = load_manifests(os.path.join(args.root, "kubernetes"))
    schema, fields, consistency, ok = validate(objects, args)
    for title, errors in (("schema", schema), ("unknown fields", fields),
                          ("consistency", consistency)):
        for e in errors:
            print("%s: %s" % (title, e))
    print("%d objects; %d valid against the schema; %d unknown fields; "
          "%d consistency errors" % (len(objects), ok, len(fields),
                                     len(consistency)))
    failed = bool(schema or fields or consistency)
    if args.self_test:
        broken = self_test(objects, args)
        for f in broken:
            print("self test: " + f)
        failed = failed or bool(broken)
        if not broken:
            print("self test: a misspelt field, a wrong type and an unknown "
                  "flag are each caught")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
