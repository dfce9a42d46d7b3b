//! Tasks: waiting for answers, resuming once, and what a stopped runner leaves.

use askgate_store::{NewTask, Store, TaskEnd, TaskError, TaskRow, TaskStatus};
use jiff::Timestamp;
use serde_json::json;

use super::{at, stores, urls};

fn new_task(id: &str, created: i64) -> NewTask {
    NewTask {
        id: id.to_owned(),
        principal: "alice".into(),
        tool: "confirm_delete".into(),
        arguments: json!({"filename": "a.txt"}),
        capabilities: json!({"elicitation": {}}),
        ttl_ms: Some(60_000),
        poll_interval_ms: Some(500),
        at: at(created),
        lease: jiff::SignedDuration::from_secs(30),
    }
}

/// Create the task `id` (created at 0): the row.
async fn created(store: &Store, id: &str) -> TaskRow {
    store.create_task(&new_task(id, 0)).await.expect("created")
}

/// Create the task `id` and park it (at 1) on input requests `keys`.
async fn parked(store: &Store, id: &str, keys: &[&str]) {
    created(store, id).await;
    store
        .park_task(id, requests(keys), None, at(1))
        .await
        .expect("parks");
}

/// The task `id` as of `now`; it exists.
async fn read(store: &Store, id: &str, now: Timestamp) -> TaskRow {
    store
        .task(id, now)
        .await
        .expect("reads")
        .expect("the task exists")
}

fn requests(keys: &[&str]) -> serde_json::Map<String, serde_json::Value> {
    keys.iter()
        .map(|k| {
            (
                (*k).to_owned(),
                json!({"method": "elicitation/create", "params": {}}),
            )
        })
        .collect()
}

fn responses(keys: &[&str]) -> serde_json::Map<String, serde_json::Value> {
    keys.iter()
        .map(|k| {
            (
                (*k).to_owned(),
                json!({"action": "accept", "content": {"k": k}}),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_task_waits_for_every_answer_then_resumes_once_and_ends_once() {
    for store in stores().await {
        let created = created(&store, "t1").await;
        assert_eq!(created.status, TaskStatus::Working);
        let read = read(&store, "t1", at(1)).await;
        assert_eq!(read.task.arguments, json!({"filename": "a.txt"}));

        let parked = store
            .park_task("t1", requests(&["a", "b"]), Some("waiting"), at(2))
            .await
            .expect("parks");
        assert_eq!(parked.status, TaskStatus::InputRequired);

        // A partial answer, with a key nobody asked: kept, ignored.
        let partial = store
            .answer_task("t1", &responses(&["a", "zzz"]), at(60), at(3))
            .await
            .expect("merges");
        assert!(!partial.resume);
        assert_eq!(partial.row.status, TaskStatus::InputRequired);
        assert_eq!(partial.row.pending.keys().collect::<Vec<_>>(), ["b"]);
        assert_eq!(partial.row.answers.keys().collect::<Vec<_>>(), ["a"]);

        // Answering "a" again changes nothing: the first answer stands.
        let again = store
            .answer_task("t1", &responses(&["a"]), at(60), at(4))
            .await
            .expect("ignored");
        assert!(!again.resume);
        assert_eq!(
            again.row.answers["a"],
            json!({"action": "accept", "content": {"k": "a"}})
        );

        let last = store
            .answer_task("t1", &responses(&["b"]), at(60), at(5))
            .await
            .expect("merges");
        assert!(last.resume, "the last answer resumes the work");
        assert_eq!(last.row.status, TaskStatus::Working);
        assert!(last.row.pending.is_empty());

        let done = store
            .finish_task("t1", &TaskEnd::Completed(json!({"content": []})), at(6))
            .await
            .expect("finishes");
        assert_eq!(done.status, TaskStatus::Completed);
        assert!(matches!(
            store
                .finish_task("t1", &TaskEnd::Failed(json!({"code": 1})), at(7))
                .await,
            Err(TaskError::Illegal {
                state: "completed",
                ..
            })
        ));
        let cancelled = store.cancel_task("t1", at(8)).await.expect("idempotent");
        assert_eq!(
            cancelled.status,
            TaskStatus::Completed,
            "a finished task stays finished"
        );
        assert!(matches!(
            store.cancel_task("nope", at(8)).await,
            Err(TaskError::NotFound { .. })
        ));
    }
}

#[tokio::test]
async fn a_task_waiting_on_a_person_survives_reopening_the_store() {
    for url in urls().await {
        {
            let store = Store::open(&url).await.expect("opens");
            parked(&store, "t2", &["confirm"]).await;
        }
        let store = Store::open(&url).await.expect("reopens");
        // Hours later, long past any lease: a parked task holds none.
        let row = read(&store, "t2", at(7200)).await;
        assert_eq!(row.status, TaskStatus::InputRequired);
        assert!(row.pending.contains_key("confirm"));
        let answered = store
            .answer_task("t2", &responses(&["confirm"]), at(7300), at(7201))
            .await
            .expect("answers");
        assert!(answered.resume);
    }
}

#[tokio::test]
async fn concurrent_answers_resume_a_task_exactly_once() {
    for store in stores().await {
        parked(&store, "t3", &["x"]).await;
        let runs = (0..8).map(|_| {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .answer_task("t3", &responses(&["x"]), at(60), at(2))
                    .await
                    .expect("merges")
                    .resume
            })
        });
        let mut resumed = 0;
        for run in runs {
            if run.await.expect("joins") {
                resumed += 1;
            }
        }
        assert_eq!(resumed, 1);
    }
}

#[tokio::test]
async fn a_working_task_whose_runner_stopped_reads_as_interrupted_and_a_cancel_stands() {
    for store in stores().await {
        created(&store, "t4").await;
        // Within the lease: still working.
        let row = read(&store, "t4", at(10)).await;
        assert_eq!(row.status, TaskStatus::Working);
        assert!(store.renew_task_lease("t4", at(40)).await.expect("renews"));
        let row = read(&store, "t4", at(35)).await;
        assert_eq!(row.status, TaskStatus::Working, "the renewed lease holds");
        // Past the lease: the runner is gone.
        let row = read(&store, "t4", at(41)).await;
        assert_eq!(row.status, TaskStatus::Failed);
        assert!(
            row.error
                .as_ref()
                .and_then(|e| e["message"].as_str())
                .is_some_and(|m| m.contains("interrupted")),
            "{:?}",
            row.error
        );

        created(&store, "t5").await;
        let cancelled = store.cancel_task("t5", at(1)).await.expect("cancels");
        assert_eq!(cancelled.status, TaskStatus::Cancelled);
        assert!(matches!(
            store
                .finish_task("t5", &TaskEnd::Completed(json!({})), at(2))
                .await,
            Err(TaskError::Illegal {
                state: "cancelled",
                ..
            })
        ));
        assert!(
            !store
                .renew_task_lease("t5", at(90))
                .await
                .expect("no lease to renew")
        );
        assert!(matches!(
            store.park_task("t5", requests(&["y"]), None, at(3)).await,
            Err(TaskError::Illegal { .. })
        ));
    }
}
