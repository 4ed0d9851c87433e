//! `crds/` must be exactly what `crdgen` writes: the YAML users apply is the code's schema.

use kubetrain::api::{crd_yaml, crds};

#[test]
fn committed_crds_match_crdgen_output() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../crds");
    let mut stale = Vec::new();
    for (plural, crd) in crds() {
        let path = dir.join(format!("{plural}.yaml"));
        let want = crd_yaml(&crd).expect("CRD renders as YAML");
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        if have != want {
            stale.push(path.display().to_string());
        }
    }
    assert!(
        stale.is_empty(),
        "stale CRD files {stale:?}: run `make crds` and commit the result"
    );
}

#[test]
fn every_crd_has_status_subresource_short_name_and_category() {
    for (plural, crd) in crds() {
        let names = &crd.spec.names;
        assert!(
            names
                .categories
                .as_ref()
                .is_some_and(|c| c.iter().any(|c| c == "kubetrain")),
            "{plural}"
        );
        assert_eq!(
            names.short_names.as_ref().map(Vec::len),
            Some(1),
            "{plural}"
        );
        let version = &crd.spec.versions[0];
        assert!(
            version
                .subresources
                .as_ref()
                .and_then(|s| s.status.as_ref())
                .is_some(),
            "{plural}"
        );
        let yaml = crd_yaml(&crd).expect("renders");
        assert!(
            !yaml.contains("- null"),
            "{plural}: null in an enum is rejected by the API server"
        );
    }
}

#[test]
fn every_cel_rule_is_in_its_crd() {
    let all = crds();
    for rule in kubetrain::api::validation::rules() {
        let (_, crd) = all
            .iter()
            .find(|(plural, _)| *plural == rule.crd)
            .unwrap_or_else(|| panic!("rule for unknown CRD {}", rule.crd));
        let json = serde_json::to_string(crd).expect("CRD serialises");
        let rule_json = serde_json::to_string(rule.rule).expect("string serialises");
        assert!(
            json.contains(&rule_json),
            "{}: rule at {:?} was not attached (is the path right?): {}",
            rule.crd,
            rule.at,
            rule.rule
        );
    }
}

#[test]
fn the_pod_template_is_typed() {
    let (_, tj) = crds()
        .into_iter()
        .find(|(plural, _)| *plural == "trainingjobs")
        .expect("trainingjobs CRD");
    let schema = serde_json::to_value(&tj.spec.versions[0].schema).expect("schema");
    let template = &schema["openAPIV3Schema"]["properties"]["spec"]["properties"]["tasks"]["items"]
        ["properties"]["template"];
    let container = &template["properties"]["spec"]["properties"]["containers"]["items"];
    assert!(
        container["properties"]["resources"]["properties"]["limits"].is_object(),
        "containers[].resources.limits is not in the schema"
    );
    assert!(
        !serde_json::to_string(template)
            .expect("serialises")
            .contains("x-kubernetes-preserve-unknown-fields\":true"),
        "the template keeps unknown fields, so a typo would be pruned instead of rejected"
    );
}
