//! Malformed requests: InvalidArgument naming the field, and nothing stored or sent.

use fairdeal_proto::fairdeal::auth::v1 as pb;
use tonic::Code;

use crate::helpers::*;
use crate::on_both_backends;

async fn malformed_requests_change_nothing(backend: Backend) {
    let res = Resources::new(backend).await;
    let mut app = spawn_app(&res).await;
    let good_name = unique_name();
    let good_email = format!("{good_name}@example.com");
    let cases: Vec<(pb::RegisterRequest, &str)> = vec![
        (
            pb::RegisterRequest {
                username: String::new(),
                email: good_email.clone(),
                password: PASSWORD.into(),
            },
            "username",
        ),
        (
            pb::RegisterRequest {
                username: "x".repeat(100_000),
                email: good_email.clone(),
                password: PASSWORD.into(),
            },
            "username",
        ),
        (
            pb::RegisterRequest {
                username: "bad name".into(),
                email: good_email.clone(),
                password: PASSWORD.into(),
            },
            "username",
        ),
        (
            pb::RegisterRequest {
                username: good_name.clone(),
                email: String::new(),
                password: PASSWORD.into(),
            },
            "email",
        ),
        (
            pb::RegisterRequest {
                username: good_name.clone(),
                email: "not-an-address".into(),
                password: PASSWORD.into(),
            },
            "email",
        ),
        (
            pb::RegisterRequest {
                username: good_name.clone(),
                email: good_email.clone(),
                password: Vec::new(),
            },
            "password",
        ),
        (
            pb::RegisterRequest {
                username: good_name.clone(),
                email: good_email.clone(),
                password: vec![
                    0xff, 0xfe, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49,
                ],
            },
            "password",
        ),
        (
            pb::RegisterRequest {
                username: good_name.clone(),
                email: good_email.clone(),
                password: vec![b'a'; 100_000],
            },
            "password",
        ),
        (
            pb::RegisterRequest {
                username: good_name.clone(),
                email: good_email.clone(),
                password: b"password123".to_vec(),
            },
            "password",
        ),
    ];
    for (request, field) in cases {
        let status = app.client.register(request).await.unwrap_err();
        assert_eq!(status.code(), Code::InvalidArgument, "{field}: {status:?}");
        assert!(
            status.message().starts_with(field),
            "message names {field}: {}",
            status.message()
        );
    }
    let store = &app.app_accounts.store;
    assert!(
        store
            .account_by_username(&good_name)
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(store.unsent_mail_count().await.unwrap(), 0);

    // Login, tokens: malformed -> InvalidArgument (not "access denied", which is for
    // well-formed credentials), and no failure is counted.
    let bad_logins = [
        pb::LoginRequest {
            username: String::new(),
            password: PASSWORD.into(),
        },
        pb::LoginRequest {
            username: good_name.clone(),
            password: Vec::new(),
        },
        pb::LoginRequest {
            username: good_name.clone(),
            password: vec![0xc3, 0x28],
        },
        pb::LoginRequest {
            username: "y".repeat(10_000),
            password: PASSWORD.into(),
        },
    ];
    for request in bad_logins {
        assert_eq!(
            app.client.login(request).await.unwrap_err().code(),
            Code::InvalidArgument
        );
    }
    for token in ["", "short", &"!".repeat(43), &"a".repeat(5000)] {
        let status = app
            .client
            .refresh(pb::RefreshRequest {
                refresh_token: token.into(),
            })
            .await
            .unwrap_err();
        assert_eq!(
            status.code(),
            Code::InvalidArgument,
            "refresh token {token:?}"
        );
        let status = app
            .client
            .confirm_email(pb::ConfirmEmailRequest {
                token: token.into(),
            })
            .await
            .unwrap_err();
        assert_eq!(status.code(), Code::InvalidArgument);
    }
    // The good registration still works: nothing above reserved the name or counted a failure.
    app.register(&good_name, &good_email).await.unwrap();
}
on_both_backends!(malformed, malformed_requests_change_nothing);
