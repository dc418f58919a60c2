//! The masker over the process's secrets. The secrets are the process's, so each test uses
//! values no other test of the crate prints.

use super::*;

#[test]
fn a_value_is_masked_in_each_form_it_takes_on_the_way_out() {
    let secret = "Zq9/unit+tok=en&";
    remember(secret);
    let b64 = base64::engine::general_purpose::STANDARD;
    for form in [
        secret.to_string(),
        "Zq9%2Funit%2Btok%3Den%26".to_string(),
        "Zq9%2funit%2btok%3den%26".to_string(),
        b64.encode(secret),
        b64.encode(secret).trim_end_matches('=').to_string(),
        "Zq9/unit+tok=en&amp;".to_string(),
    ] {
        let said = format!("the server said: [{form}] (401)");
        assert_eq!(mask(&said), "the server said: [***] (401)", "{form}");
    }
}

#[test]
fn short_values_and_numbers_are_not_secrets() {
    remember("Qx7");
    remember("48213");
    remember("0.75");
    let said = "Qx7 48213 0.75";
    assert_eq!(mask(said), said);
}

#[test]
fn credentials_are_masked_as_basic_authorization_and_as_a_pair() {
    remember_url("http://unitbob:p%40ssUnit@h:1/x");
    let b64 = base64::engine::general_purpose::STANDARD;
    let basic = format!("Authorization: Basic {}", b64.encode("unitbob:p@ssUnit"));
    assert_eq!(mask(&basic), "Authorization: Basic ***");
    assert_eq!(mask("creds unitbob:p@ssUnit"), "creds ***");
    assert_eq!(mask("creds unitbob:p%40ssUnit"), "creds ***");
}

#[test]
fn json_is_masked_in_its_values_and_keeps_its_keys_and_numbers() {
    remember("Kw4unitjson");
    let json = r#"{"Kw4unitjson": 12, "first": "echo \"Kw4unitjson\" back", "n": 3.5}"#;
    let masked = mask_json(json);
    assert_eq!(
        masked,
        r#"{"Kw4unitjson": 12, "first": "echo \"***\" back", "n": 3.5}"#
    );
    serde_json::from_str::<serde_json::Value>(&masked).unwrap();
}

#[test]
fn a_url_shows_its_password_masked_and_an_env_reference_as_written() {
    assert_eq!(redact_url("http://u:secret@h:1/p"), "http://u:***@h:1/p");
    assert_eq!(redact_url("http://u@h:1"), "http://u@h:1");
    assert_eq!(redact_url("http://h:1/a@b"), "http://h:1/a@b");
    assert_eq!(
        redact_url("postgres://u:${env:PGPASSWORD}@h/db"),
        "postgres://u:${env:PGPASSWORD}@h/db"
    );
    assert_eq!(
        redact_url("postgres://h/db?sslmode=require&password=x1&sslpassword=${env:K}"),
        "postgres://h/db?sslmode=require&password=***&sslpassword=${env:K}"
    );
}

#[test]
fn html_is_masked_in_its_text_and_keeps_its_markup() {
    remember("Hv5unitpage");
    let page = "<style>.Hv5unitpage{}</style><p class=\"Hv5unitpage\">said Hv5unitpage</p>";
    assert_eq!(
        mask_html(page),
        "<style>.Hv5unitpage{}</style><p class=\"Hv5unitpage\">said ***</p>"
    );
}

/// `PGUSER=wlrun`, `PGHOST=...`: an endpoint's user name, host and database are printed as it
/// connects; masked, wlrun's own name read `*** 0.1.0` on a first run.
#[test]
fn an_endpoints_user_host_and_database_are_not_secrets() {
    for read in [
        "unitwluser",
        "unit-db-host.example",
        "unitwldb",
        "Unit-pw-7781",
    ] {
        remember(read);
    }
    remember_url(
        "postgres://unitwluser:Unit-pw-7781@unit-db-host.example:5432/unitwldb?sslmode=disable",
    );
    remember("unitwluser");
    assert_eq!(
        mask("unitwluser 0.1.0 at unit-db-host.example:5432/unitwldb, password Unit-pw-7781"),
        "unitwluser 0.1.0 at unit-db-host.example:5432/unitwldb, password ***"
    );
    assert_eq!(mask("creds unitwluser:Unit-pw-7781"), "creds ***");
}
