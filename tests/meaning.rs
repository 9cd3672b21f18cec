//! Search by meaning through a real server: needs stated in other words than the profiles',
//! English ↔ Chinese both ways, problem-shaped needs, read-your-writes for meaning, exact totals,
//! evidence in the ranking (stuffed spam does not take the top), `explain`, and the fallback to
//! words when the model is off or missing (said in /readyz).

mod common;

use std::collections::HashSet;

use common::{Agent, Server};
use serde_json::{Value, json};

fn handles(r: &common::Resp) -> Vec<String> {
    r.json["agents"].as_array().unwrap().iter().map(|a| a["handle"].as_str().unwrap().to_owned()).collect()
}

fn q(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

async fn agent_with(s: &Server, prefix: &str, profile: Value) -> Agent {
    let a = s.register(prefix).await;
    s.patch("/api/me", Some(&a.key), profile).await.expect(200);
    a
}

/// An agent described only in Chinese (`description_en` is the `-` a profile needs).
async fn chinese_only_agent(
    s: &Server,
    prefix: &str,
    [name, tagline, description_zh]: [&str; 3],
    capabilities: &[&str],
) -> Agent {
    let profile = json!({"name": name, "tagline": tagline, "description_en": "-",
        "description_zh": description_zh, "capabilities": capabilities});
    agent_with(s, prefix, profile).await
}

/// The similarity `explain=true` shows for `handle`, if it is listed.
async fn similarity_of(s: &Server, need: &str, handle: &str) -> Option<f64> {
    let r = s.get(&format!("/api/agents?q={}&explain=true&limit=100", q(need)), None).await;
    r.expect(200);
    let agents = r.json["agents"].as_array().unwrap().clone();
    let hit = agents.into_iter().find(|a| a["handle"] == handle)?;
    hit["ranking"]["signals"]["similarity"].as_f64()
}

fn threshold() -> f64 {
    f64::from(agentdir::service::finding::MEANING_THRESHOLD)
}

async fn search(s: &Server, need: &str) -> common::Resp {
    let r = s.get(&format!("/api/agents?q={}", q(need)), None).await;
    r.expect(200);
    r
}

/// Five agents of distinct trades, each described in one language only.
struct Trades {
    subtitles: Agent,
    invoices: Agent,
    code_review_zh: Agent,
    contracts_zh: Agent,
    tax: Agent,
}

async fn trades(s: &Server) -> Trades {
    Trades {
        subtitles: agent_with(s, "subs", json!({
            "name": "Caption Studio",
            "tagline": "Audio transcription and translation",
            "description_en": "We transcribe audio and video, translate it into Chinese and deliver subtitle files (SRT) for podcasts and videos.",
            "capabilities": ["transcription", "subtitles"],
        }))
        .await,
        invoices: agent_with(s, "ocr", json!({
            "name": "Ledger Reader",
            "tagline": "Document OCR and data entry",
            "description_en": "OCR for scanned receipts and invoices, with the line items exported to Excel or CSV.",
            "capabilities": ["ocr", "data-entry"],
        }))
        .await,
        code_review_zh: agent_with(s, "cr", json!({
            "name": "评审助手",
            "tagline": "代码评审",
            "description_en": "-",
            "description_zh": "代码评审：审查 Rust 和 Go 代码中的安全问题与性能问题，给出修改建议。",
            "capabilities": ["代码评审"],
        }))
        .await,
        contracts_zh: agent_with(s, "law", json!({
            "name": "合同顾问",
            "tagline": "合同审阅",
            "description_en": "-",
            "description_zh": "为中小企业审阅合同，标注法律风险并提出修改意见。",
            "capabilities": ["合同审阅"],
        }))
        .await,
        tax: agent_with(s, "tax", json!({
            "name": "Steuer Helper",
            "tagline": "Tax filing",
            "description_en": "Prepares annual tax returns for freelancers and small businesses in Germany.",
            "capabilities": ["tax"],
        }))
        .await,
    }
}

#[tokio::test]
async fn needs_in_other_words_and_the_other_language_find_the_agent_that_meets_them() {
    let s = Server::start().await;
    let t = trades(&s).await;
    let cases: [(&str, &Agent); 8] = [
        // Paraphrase: no word of the profile.
        ("someone who can turn my podcast into Chinese subtitles", &t.subtitles),
        // Problem-shaped.
        ("I have a pile of scanned invoices and want them in a spreadsheet", &t.invoices),
        // English need, agent described only in Chinese.
        ("review my Go code for security bugs", &t.code_review_zh),
        ("someone to check my contract for legal risks", &t.contracts_zh),
        // Chinese need, agent described only in English.
        ("报税", &t.tax),
        ("播客音频转写并翻译成中文字幕", &t.subtitles),
        // Near words: 审查 for an agent that writes 评审.
        ("代码审查", &t.code_review_zh),
        ("找人帮我审一下合同", &t.contracts_zh),
    ];
    for (need, agent) in cases {
        let r = search(&s, need).await;
        let found = handles(&r);
        assert_eq!(found.first(), Some(&agent.handle), "{need}: {found:?}");
        // The total counts what the pages list, each agent once.
        assert_eq!(r.json["total"].as_u64().unwrap() as usize, found.len(), "{need}");
        assert_eq!(found.iter().collect::<HashSet<_>>().len(), found.len());
    }
    // A whole handle names its agent: it comes first, whatever else the words and meaning find.
    let r = s.get(&format!("/api/agents?q={}&explain=true", t.tax.handle), None).await;
    assert_eq!(handles(&r).first(), Some(&t.tax.handle));
    assert_eq!(r.json["agents"][0]["ranking"]["signals"]["exact_handle"], true);
    // A rare term one agent holds ranks it above profiles that are merely similar.
    let mut twins = Vec::new();
    for i in 0..3 {
        twins.push(
            agent_with(
                &s,
                "twin",
                json!({"description_en": format!("Subtitle studio number {i}: zx81quartz transcripts")}),
            )
            .await,
        );
    }
    let r = search(&s, "zx81quartz").await;
    assert_eq!(handles(&r).len(), 3, "{}", r.json);
    let rare =
        agent_with(&s, "rare", json!({"description_en": "Subtitle studio: qq47flint transcripts"})).await;
    assert_eq!(handles(&search(&s, "qq47flint").await).first(), Some(&rare.handle));
    // A need nobody meets finds nobody it should not.
    let r = search(&s, "repair my bicycle's gearbox").await;
    assert!(!handles(&r).contains(&t.tax.handle), "{:?}", handles(&r));
}

#[tokio::test]
async fn chinese_names_and_services_in_english_needs_find_agents_described_in_chinese() {
    let s = Server::start().await;
    // Agents of other trades, in both languages, for the two to be found among.
    trades(&s).await;
    let xhs = chinese_only_agent(
        &s,
        "xhs",
        [
            "小红书运营",
            "小红书、抖音内容运营与涨粉",
            "小红书和抖音账号代运营：账号定位、选题、笔记和短视频脚本撰写、发布排期、评论互动，按月复盘涨粉数据。",
        ],
        &["小红书运营", "内容营销"],
    )
    .await;
    let books = chinese_only_agent(
        &s,
        "books",
        ["代账小办", "深圳小公司代理记账", "为深圳的小微企业代理记账、每月报税、开具发票和年报。"],
        &["代理记账", "报税"],
    )
    .await;
    // The model spells `Xiaohongshu` and `Shenzhen` out in pinyin pieces that say nothing;
    // read as 小红书 and 深圳, each need is a match for the agent described in Chinese.
    for (need, agent) in [
        ("grow our followers on Xiaohongshu", &xhs),
        ("bookkeeping for a small company registered in SHENZHEN", &books),
    ] {
        let r = search(&s, need).await;
        assert_eq!(handles(&r).first(), Some(&agent.handle), "{need}: {}", r.json);
        let similarity = similarity_of(&s, need, &agent.handle).await.unwrap();
        assert!(similarity >= threshold(), "{need}: {similarity}");
    }
    // A short English need that names a service is given to the model with the service's
    // Chinese name beside it: `resume writing` is then near the agent that writes 简历 (0.30;
    // 0.21 without the Chinese name, as near as the judged sets' unrelated agents run).
    let resumes = chinese_only_agent(
        &s,
        "resumes",
        [
            "简历优化",
            "中英文简历修改",
            "帮求职者修改中英文简历：梳理经历、突出成果、匹配岗位要求，附求职信修改。",
        ],
        &["简历优化", "求职信"],
    )
    .await;
    let similarity = similarity_of(&s, "resume writing", &resumes.handle).await.unwrap();
    assert!(similarity >= 0.25, "resume writing: {similarity}");
    // The name as written still matches by the index's word rule.
    let writer = agent_with(
        &s,
        "writer",
        json!({
            "description_en": "I write notes and captions for brands on Xiaohongshu, in English and Chinese.",
        }),
    )
    .await;
    let r = search(&s, "Xiaohongshu captions").await;
    assert!(handles(&r).contains(&writer.handle), "{}", r.json);
}

#[tokio::test]
async fn a_need_far_from_every_profile_still_meets_the_nearest_agents() {
    use agentdir::service::finding::{NEAREST_FILL, NEAREST_FLOOR};
    let s = Server::start().await;
    let t = trades(&s).await;
    // Each need is below the similarity of a match for every profile, and nearest one agent that
    // meets it (~0.16 here; the others are below the floor).
    for (need, agent) in [
        ("Korean variety show fan captions", &t.subtitles),
        ("ask someone about clause 7 of my supplier agreement", &t.contracts_zh),
    ] {
        let r = s.get(&format!("/api/agents?q={}&explain=true&limit=100", q(need)), None).await;
        r.expect(200);
        assert_eq!(handles(&r).first(), Some(&agent.handle), "{need}: {}", r.json);
        let agents = r.json["agents"].as_array().unwrap();
        assert_eq!(r.json["total"].as_u64(), Some(agents.len() as u64), "{need}");
        assert!(agents.len() <= NEAREST_FILL, "{need}");
        for a in agents {
            let sim = a["ranking"]["signals"]["similarity"].as_f64().unwrap();
            assert!(sim >= f64::from(NEAREST_FLOOR) && sim < threshold(), "{need}: {a}");
        }
    }
    // One agent that holds the words makes the need precise: it matches, nothing merely near
    // is added.
    let holder = agent_with(
        &s,
        "holder",
        json!({"description_en": "Captions studio: Korean variety show fan captions"}),
    )
    .await;
    let r = search(&s, "Korean variety show fan captions").await;
    assert_eq!(handles(&r), std::slice::from_ref(&holder.handle), "{}", r.json);
    assert_eq!(r.json["total"], 1);
    // Ten agents that hold the words fill the page: nothing merely near is added.
    for i in 0..NEAREST_FILL {
        agent_with(
            &s,
            "cap",
            json!({"description_en": format!("Captions studio {i}: Korean variety show fan captions")}),
        )
        .await;
    }
    let r = s
        .get(&format!("/api/agents?q={}&explain=true&limit=100", q("Korean variety show fan captions")), None)
        .await;
    assert_eq!(r.json["total"].as_u64(), Some(NEAREST_FILL as u64 + 1), "{}", r.json);
    assert!(!handles(&r).contains(&t.subtitles.handle), "{}", r.json);
}

#[tokio::test]
async fn a_long_need_meets_the_agent_that_fits_below_a_short_need_s_floor() {
    use agentdir::service::finding::NEAREST_FLOOR;
    let s = Server::start().await;
    trades(&s).await;
    let maps = agent_with(&s, "maps", json!({
        "name": "Map Presence",
        "tagline": "Local search listings",
        "description_en": "We put shops and cafes on Google Maps and Apple Maps: business profiles, photos, opening hours and replies to reviews.",
        "capabilities": ["local seo", "listings"],
    }))
    .await;
    let leaks = agent_with(&s, "leaks", json!({
        "name": "Leak Finder",
        "tagline": "Secrets in git history",
        "description_en": "Scans a repository's whole git history for passwords, API keys and tokens, and tells you which to rotate.",
        "capabilities": ["security", "git"],
    }))
    .await;
    // Situations of 60–70 tokens, each nearest the agent that meets it under the floor of a short
    // need's fill (0.12, checked below), above a long need's (0.08).
    for (need, agent) in [
        (
            "My café opened in March on a side street near the university. Students say they only heard of us \
             from friends, because when they look on their phones for coffee nearby we are nowhere to be seen. \
             I do not know what I am supposed to do about it, and the rent is due in two weeks.",
            &maps,
        ),
        (
            "A contractor we let go last month still knows a lot about our systems. Someone told me old commits \
             can keep things like database logins around forever, and I am not sure what we have ever committed \
             over five years of work.",
            &leaks,
        ),
    ] {
        let r = s.get(&format!("/api/agents?q={}&explain=true&limit=100", q(need)), None).await;
        r.expect(200);
        assert_eq!(handles(&r).first(), Some(&agent.handle), "{need}: {}", r.json);
        let sim = r.json["agents"][0]["ranking"]["signals"]["similarity"].as_f64().unwrap();
        assert!(sim < f64::from(NEAREST_FLOOR), "{need}: {sim}");
    }
}

#[tokio::test]
async fn made_up_words_find_nobody_while_real_words_still_meet_agents() {
    let s = Server::start().await;
    let t = trades(&s).await;
    // Profiles that made-up needs land nearest to on the judged set: a vector of noise is near
    // short Chinese profiles and a translation hub at up to ~0.21, past the meaning threshold.
    let hubs = [
        json!({"name": "Mandarin Buddy", "tagline": "Conversational Mandarin practice for English speakers",
            "description_en": "Daily speaking practice in Mandarin Chinese for beginners and intermediate learners: role plays, tone correction, HSK vocabulary. I teach the language; I don't translate documents.",
            "description_zh": "为初中级学习者提供每天的普通话口语练习：情景对话、声调纠正、HSK 词汇。我教语言，不翻译文件。",
            "capabilities": ["language tutoring", "Mandarin", "HSK"]}),
        json!({"name": "Translate All Languages", "tagline": "Chinese translation English translation all languages translation cheap",
            "description_en": "Translation translation translation. Chinese translation, English to Chinese, Chinese to English, document translation, README translation, app localization, subtitle translation. 翻译 中英翻译. Cheap translation.",
            "capabilities": ["translation", "Chinese translation", "localization", "翻译"]}),
        json!({"name": "小学作业辅导", "tagline": "小学语数英作业辅导", "description_en": "-",
            "description_zh": "每天晚上线上陪孩子完成小学语文、数学、英语作业，讲清错题，家长不用再吼。",
            "capabilities": ["作业辅导", "小学"]}),
        json!({"name": "有声书工作室", "tagline": "中文有声书录制与配音", "description_en": "-",
            "description_zh": "专业中文有声书录制：小说、儿童故事、知识课程。真人配音加后期制作，可按角色分配多人声音，交付可上架喜马拉雅的音频。",
            "capabilities": ["有声书", "配音", "音频后期"]}),
        json!({"name": "运维助手", "tagline": "阿里云、腾讯云服务器运维与监控告警", "description_en": "-",
            "description_zh": "负责云服务器日常运维：阿里云、腾讯云 ECS 部署、Nginx 配置、监控告警（短信、钉钉通知）、日志排查、故障处理。7x24 小时值守。",
            "capabilities": ["运维", "监控告警", "故障排查", "阿里云"]}),
        // Nearest to `xyzzy plugh` and `bazinga florp` over the held-out set's profiles.
        json!({"name": "Audio Restore", "tagline": "Damaged dialogue rescued: noise, echo, hum and clipping removed",
            "description_en": "When a recording is almost unusable: I remove room echo and reverb, background hum and buzz, traffic and air conditioning noise, clicks and distortion from clipping, using iZotope RX by hand, for podcasts, interviews, film dialogue and court recordings.",
            "capabilities": ["audio restoration", "noise removal", "de-reverb", "iZotope RX"]}),
        json!({"name": "FBA 头程专线", "tagline": "亚马逊美国、欧洲 FBA 头程海运、空派", "description_en": "-",
            "description_zh": "专做亚马逊 FBA 头程：美森快船、普船海卡、空派，从华南、华东工厂提货，贴 FBA 标和外箱标、打托，代为预约亚马逊仓库入仓，美国西部仓和东部仓都能送，欧洲发德国、英国仓。按公斤或立方报价。",
            "capabilities": ["FBA头程", "亚马逊物流", "海运快船", "空派"]}),
    ];
    for profile in hubs {
        agent_with(&s, "hub", profile).await;
    }
    let growth = agent_with(
        &s,
        "growth",
        json!({
            "name": "Red Growth",
            "tagline": "Brand accounts on Chinese social media",
            "description_en": "We run brand accounts on Chinese social media for foreign brands: content plans, posting, more followers, influencer campaigns.",
            "capabilities": ["social media marketing"],
        }),
    )
    .await;
    let rare = agent_with(
        &s,
        "xbrl",
        json!({
            "name": "Filing Desk",
            "tagline": "Financial reports for listed companies",
            "description_en": "We tag annual reports in XBRL for stock exchange filings.",
            "capabilities": ["financial-reporting"],
        }),
    )
    .await;
    // Made-up words, keyboard mashes, made-up product codes: nobody, not the nearest strangers.
    for need in [
        "zq86207b2b",
        "asdfghjkl qwerty",
        "flurbix quantomatic",
        "glarbnok frimble zindle",
        "xkcd8821 vortanex",
        "qwertyuiop",
        "ZX-4471-QP",
        // A short made-up word can be a real piece and an ending (`plugh` is `▁plug` + `h`,
        // `florp` `▁flor` + `p`): beside gibberish it does not make the need real.
        "xyzzy plugh",
        "bazinga florp",
        "sprocketeer vorn",
        // Words that say nothing of a need do not make gibberish around them real: no nearest
        // agents fill its page (a page of real words would get the two hubs it lands near).
        "the flurbix of zandor",
        "a blorptastic zindle for my quorb",
        // Filler and held-down keys, which the vocabulary holds whole (`lorem`, `foo`, `aaaa`,
        // every Chinese character).
        "lorem ipsum dolor sit amet",
        "foo bar baz",
        "aaaa bbbb",
        "哈哈哈哈",
        "啊啊啊",
        // Words that ask without saying what, around gibberish; a code whose short words the
        // vocabulary spells whole (`xj`).
        "glarbnok service",
        "help me with my zibberflax",
        "snorfle dimblewick agent",
        "QWERTY-99-XJ",
        "ABC-123",
        // Chinese characters drawn at random, which hold no dictionary word, and babble.
        "荣翩瞿颢",
        "钗鬟甍彧",
        "榮翩瞿顥",
        "阿巴阿巴",
        "咕噜咕噜",
    ] {
        let r = search(&s, need).await;
        assert_eq!(r.json["agents"], json!([]), "{need}: {}", r.json);
        assert_eq!(r.json["total"], 0, "{need}");
    }
    // A rare real term a profile holds, a platform's name, the other language, misspellings:
    // each still meets the agent that fits, first.
    for (need, agent) in [
        ("XBRL", &rare),
        ("grow our followers on Xiaohongshu", &growth),
        ("报税", &t.tax),
        // The same in Traditional characters, which jieba's (Simplified) dictionary lacks.
        ("報稅", &t.tax),
        ("合約審閱", &t.contracts_zh),
        ("subtitel translaton for my podcst", &t.subtitles),
        ("scaned invoises to exel", &t.invoices),
        // A real word the vocabulary spells in a piece and an ending (`▁bug` + `s`) and no
        // profile holds: the need is real, and meets the Chinese code reviewer by meaning.
        ("bugs", &t.code_review_zh),
    ] {
        let r = search(&s, need).await;
        assert_eq!(handles(&r).first(), Some(&agent.handle), "{need}: {}", r.json);
        assert_eq!(r.json["total"].as_u64(), Some(handles(&r).len() as u64), "{need}");
    }
    // Platforms' names jieba's dictionary lacks, in Chinese (from the list of names) or in
    // Latin letters, are real needs: the agents nearest them fill the page.
    for need in ["小红书", "Xiaohongshu", "微信"] {
        let r = search(&s, need).await;
        assert!(handles(&r).contains(&growth.handle), "{need}: {}", r.json);
    }
}

#[tokio::test]
async fn a_profile_is_found_by_meaning_as_soon_as_its_write_returns() {
    let s = Server::start().await;
    let a = s.register("ryw").await;
    let need = "someone to walk my dog while I am at work";
    // Before the write the bare profile is at most one of the nearest agents, never a match.
    assert!(similarity_of(&s, need, &a.handle).await.is_none_or(|sim| sim < threshold()));
    s.patch(
        "/api/me",
        Some(&a.key),
        json!({"description_en": "Pet care: daily dog walking and pet sitting in Berlin."}),
    )
    .await
    .expect(200);
    assert_eq!(handles(&search(&s, need).await).first(), Some(&a.handle));
    // Offerings count too.
    let b = s.register("ryw").await;
    let need = "who can bake a wedding cake";
    s.put("/api/me/offerings", Some(&b.key), json!({"offerings": [{"title": "Custom wedding cakes", "deliverable": "A three-tier cake baked to order", "mode": "quote", "tags": ["baking"]}]}))
        .await
        .expect(200);
    assert_eq!(handles(&search(&s, need).await).first(), Some(&b.handle));
}

#[tokio::test]
async fn filters_keep_their_meaning_and_pages_add_up_to_the_total() {
    let s = Server::start().await;
    let t = trades(&s).await;
    s.admin_ok(&["verify-mailbox", &t.invoices.handle]);
    let need = q("I have a pile of scanned invoices and want them in a spreadsheet");
    let r = s.get(&format!("/api/agents?q={need}&verified=true"), None).await;
    assert_eq!(handles(&r), vec![t.invoices.handle.clone()]);
    let r = s.get(&format!("/api/agents?q={need}&capability=subtitles"), None).await;
    assert!(!handles(&r).contains(&t.invoices.handle));
    let all = handles(&s.get(&format!("/api/agents?q={}&limit=100", q("translation")), None).await);
    let total =
        s.get(&format!("/api/agents?q={}", q("translation")), None).await.json["total"].as_u64().unwrap();
    assert_eq!(all.len() as u64, total);
    let mut paged = Vec::new();
    for offset in 0..all.len() {
        paged.extend(handles(
            &s.get(&format!("/api/agents?q={}&limit=1&offset={offset}", q("translation")), None).await,
        ));
    }
    assert_eq!(paged, all);
}

/// More agents hold the need's words than the word window takes: those past it are near the
/// need too, and are asked of the index as word matches, so each counts once.
#[tokio::test]
async fn word_matches_past_the_window_count_once() {
    let s = Server::start_with(common::RELAXED_LIMITS).await;
    let window = agentdir::service::finding::WORD_WINDOW;
    let mut holding = HashSet::new();
    for i in 0..window + 12 {
        let a = agent_with(&s, "kiln", json!({
            "name": format!("Kiln Works {i}"),
            "tagline": "Kiln firing for ceramics",
            "description_en": format!("Kiln firing for ceramics, batch {i}: we fire stoneware and porcelain for potters."),
        }))
        .await;
        holding.insert(a.handle);
    }
    let mut glaze_only = HashSet::new();
    for i in 0..3 {
        let a = agent_with(
            &s,
            "glaze",
            json!({
                "name": format!("Glaze Room {i}"),
                "tagline": "Pottery glazing",
                "description_en": "We glaze and fire stoneware pottery for artists and small studios.",
            }),
        )
        .await;
        glaze_only.insert(a.handle);
    }
    let need = q("kiln firing ceramics");
    let total = search(&s, "kiln firing ceramics").await.json["total"].as_u64().unwrap() as usize;
    let mut seen = Vec::new();
    for offset in (0..total).step_by(100) {
        let page = s.get(&format!("/api/agents?q={need}&limit=100&offset={offset}"), None).await;
        page.expect(200);
        assert_eq!(page.json["total"].as_u64().unwrap() as usize, total);
        seen.extend(handles(&page));
    }
    let distinct: HashSet<String> = seen.iter().cloned().collect();
    assert_eq!(distinct.len(), seen.len(), "an agent is listed twice");
    assert_eq!(seen.len(), total, "the pages hold the total");
    assert!(holding.is_subset(&distinct), "every word match is listed");
    assert!(
        distinct.difference(&holding).all(|h| glaze_only.contains(h)),
        "only the glaze rooms come by meaning alone: {total}"
    );
}

#[tokio::test]
async fn stuffed_unverified_agents_do_not_take_the_top_from_verified_ones() {
    let s = Server::start().await;
    let need = "translate my contract from German to English";
    let mut verified = HashSet::new();
    for i in 0..5 {
        let a = s.verified("pro").await;
        s.patch("/api/me", Some(&a.key), json!({
            "name": format!("Legal Translations {i}"),
            "description_en": "Certified translation of contracts and legal documents from German into English.",
            "capabilities": ["translation", "legal"],
        }))
        .await
        .expect(200);
        verified.insert(a.handle);
    }
    for i in 0..30 {
        agent_with(&s, "spam", json!({
            "name": format!("translate contract German English {i}"),
            "tagline": "translate contract German English translate contract",
            "description_en": "translate my contract from German to English translate contract German English translate translate contract contract German German English English",
            "capabilities": ["translate", "contract", "german", "english"],
        }))
        .await;
    }
    for text in [need, "contract translation"] {
        let r = s.get(&format!("/api/agents?q={}&explain=true&limit=100", q(text)), None).await;
        let top: HashSet<String> = handles(&r).into_iter().take(5).collect();
        let shown: Vec<String> = r.json["agents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a["handle"].as_str().unwrap().starts_with("pro"))
            .map(|a| format!("{} {}", a["handle"], a["ranking"]))
            .collect();
        assert_eq!(top, verified, "{text}: {}", shown.join("\n"));
    }
}

#[tokio::test]
async fn stuffed_sign_ups_never_hold_more_than_two_of_the_top_five() {
    let s = Server::start().await;
    let need = "translate my contract from German to English";
    // Verified agents that meet the need in their own words (they fit less than a profile
    // that repeats the need).
    let mut vouched = HashSet::new();
    // Broad profiles: they meet the need (fit at least the yield rule's), but thirty profiles
    // that repeat it outscore each of them on relevance.
    let own_words = [
        "Localisation of software and marketing copy into German and English.",
        "Certified translations for expats: certificates, letters and agreements.",
        "Multilingual localisation of websites, manuals and business agreements, German and English.",
        "Certified translations for expats: certificates, letters and agreements from German.",
        "Legal document services: drafting and reviewing agreements in two languages.",
    ];
    for (i, text) in own_words.iter().enumerate() {
        let a = s.verified("vouched").await;
        s.patch(
            "/api/me",
            Some(&a.key),
            json!({
                "name": format!("Lex Bridge {i}"),
                "description_en": text,
                "capabilities": ["legal"],
            }),
        )
        .await
        .expect(200);
        vouched.insert(a.handle);
    }
    // Thirty fresh sign-ups, each stuffed with the need's words in its own order (so none is a
    // near copy of another).
    let words = ["translate", "contract", "German", "English", "translation", "contracts"];
    let mut stuffed = HashSet::new();
    for i in 0..30 {
        let mut mine: Vec<&str> = (0..12).map(|j| words[(i * 7 + j * (i % 5 + 1)) % words.len()]).collect();
        mine.push(["fast", "cheap", "best", "pro", "expert", "online"][i % 6]);
        let a = agent_with(
            &s,
            "stuffed",
            json!({
                "name": format!("{} {} {i}", words[i % 4], words[(i + 1) % 4]),
                "tagline": mine[..6].join(" "),
                "description_en": format!("{need}. {}", mine.join(" ")),
                "capabilities": ["translate", "contract"],
            }),
        )
        .await;
        stuffed.insert(a.handle);
    }
    let r = s.get(&format!("/api/agents?q={}&explain=true&limit=10", q(need)), None).await;
    r.expect(200);
    let top: Vec<String> = handles(&r).into_iter().take(5).collect();
    let taken = top.iter().filter(|h| stuffed.contains(*h)).count();
    assert!(taken <= 2, "{taken} of the top five are stuffed sign-ups: {}", r.json);
    assert!(top.iter().filter(|h| vouched.contains(*h)).count() >= 3, "{}", r.json);
    for hit in r.json["agents"].as_array().unwrap() {
        let handle = hit["handle"].as_str().unwrap();
        assert_eq!(hit["ranking"]["signals"]["newcomer"], stuffed.contains(handle), "{hit}");
    }
}

#[tokio::test]
async fn a_handle_that_is_a_common_word_of_the_need_does_not_take_the_top() {
    let s = Server::start().await;
    let pro = s.claimed("pro", "owner@example.org").await;
    s.patch("/api/me", Some(&pro.key), json!({
        "name": "Lingua Pro",
        "tagline": "Professional translator",
        "description_en": "A professional translator for contracts, websites and manuals in English, German and Chinese.",
        "capabilities": ["translation"],
    }))
    .await
    .expect(200);
    let fresh = s
        .post(
            "/api/agents",
            None,
            json!({
                "handle": "translator", "name": "Translator", "owner": "Someone", "tagline": "translator",
                "mailbox": "translator@example.org", "accept_rules": true,
                "description_en": "Translator. I am a translator and I translate.",
            }),
        )
        .await;
    fresh.expect(201);
    let r = s.get("/api/agents?q=translator&explain=true", None).await;
    r.expect(200);
    assert_eq!(handles(&r).first(), Some(&pro.handle), "{}", r.json);
    let fresh_hit =
        r.json["agents"].as_array().unwrap().iter().find(|a| a["handle"] == "translator").unwrap();
    assert_eq!(fresh_hit["ranking"]["signals"]["exact_handle"], false, "{fresh_hit}");
    // A handle that no other agent's words hold still names its agent.
    let r = s.get(&format!("/api/agents?q={}&explain=true", pro.handle), None).await;
    assert_eq!(handles(&r).first(), Some(&pro.handle));
    assert_eq!(r.json["agents"][0]["ranking"]["signals"]["exact_handle"], true);
}

#[tokio::test]
async fn copies_of_one_stuffed_profile_do_not_crowd_out_an_agent_that_fits() {
    let s = Server::start().await;
    let need = "translate my contract from German to English";
    let mut copies = Vec::new();
    for _ in 0..6 {
        let spam = agent_with(&s, "copy", json!({
            "name": "translate contract German English",
            "tagline": "translate contract German English translate contract",
            "description_en": "translate my contract from German to English translate contract German English translate translate contract contract German German English English",
            "capabilities": ["translate", "contract", "german", "english"],
        }))
        .await;
        copies.push(spam.handle);
    }
    let fits = agent_with(&s, "fits", json!({
        "name": "Rechtsübersetzer",
        "description_en": "Certified translation of contracts and legal documents from German into English.",
        "capabilities": ["translation", "legal"],
    }))
    .await;
    let r = s.get(&format!("/api/agents?q={}&explain=true&limit=100", q(need)), None).await;
    r.expect(200);
    let order = handles(&r);
    let place = order.iter().position(|h| *h == fits.handle);
    assert!(place.is_some_and(|p| p <= 1), "{order:?}\n{}", r.json);
    let marked: Vec<bool> = r.json["agents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| copies.iter().any(|c| a["handle"] == c.as_str()))
        .map(|a| a["ranking"]["signals"]["near_copy"].as_bool().unwrap())
        .collect();
    assert_eq!(marked, [false, true, true, true, true, true], "{}", r.json);
}

#[tokio::test]
async fn explain_shows_the_score_and_its_signals() {
    let s = Server::start().await;
    let t = trades(&s).await;
    let r = s.get(&format!("/api/agents?q={}&explain=true", q("subtitles for my podcast")), None).await;
    r.expect(200);
    let hits = r.json["agents"].as_array().unwrap();
    assert_eq!(hits[0]["handle"], t.subtitles.handle.as_str());
    let mut last = f64::INFINITY;
    for hit in hits {
        let score = hit["ranking"]["score"].as_f64().unwrap();
        assert!(score <= last, "ordered by score");
        last = score;
        let signals = &hit["ranking"]["signals"];
        for name in [
            "words",
            "meaning",
            "relevance",
            "evidence",
            "trust_level",
            "live_link_proofs",
            "confirmed_collaborations",
            "days_since_active",
        ] {
            assert!(signals[name].is_number(), "{name} in {signals}");
        }
        // Operator actions weigh on `evidence`, but their counts are not shown.
        for name in ["hidden_calls", "suspensions"] {
            assert!(signals.get(name).is_none(), "{name} in {signals}");
        }
        assert_eq!(signals["matched_by"], "combined");
    }
    assert!(
        hits[0]["ranking"]["signals"]["similarity"].as_f64().unwrap()
            >= f64::from(agentdir::service::finding::MEANING_THRESHOLD)
    );
    // Without explain, no ranking.
    let r = search(&s, "subtitles for my podcast").await;
    assert!(r.json["agents"][0].get("ranking").is_none());
}

#[tokio::test]
async fn explain_names_the_parts_of_the_profile_that_hold_the_words() {
    let s = Server::start().await;
    let a = agent_with(
        &s,
        "parts",
        json!({
            "name": "Caption Works",
            "tagline": "Audio transcription",
            "description_en": "We transcribe interviews and lectures.",
            "capabilities": ["transcription", "subtitles"],
        }),
    )
    .await;
    s.put("/api/me/offerings", Some(&a.key), json!({"offerings": [
        {"title": "Meeting notes", "deliverable": "A summary of the call", "mode": "free"},
        {"title": "Subtitles for podcasts", "deliverable": "An SRT file", "mode": "free", "tags": ["subtitles"]},
    ]}))
    .await
    .expect(200);
    let r = s.get(&format!("/api/agents?q={}&explain=true", q("subtitles")), None).await;
    r.expect(200);
    assert_eq!(handles(&r), vec![a.handle.clone()], "{}", r.json);
    assert_eq!(
        r.json["agents"][0]["ranking"]["signals"]["matched_fields"],
        json!(["capabilities.1", "offerings.1.title", "offerings.1.tags.0"]),
        "{}",
        r.json
    );
    // Words in two parts: each part that holds one of them is named.
    let r = s.get(&format!("/api/agents?q={}&explain=true", q("transcription podcasts")), None).await;
    assert_eq!(
        r.json["agents"][0]["ranking"]["signals"]["matched_fields"],
        json!(["tagline", "capabilities.0", "offerings.1.title"]),
        "{}",
        r.json
    );
    // Found by its handle's words: the handle is named.
    let r = s.get(&format!("/api/agents?q={}&explain=true", a.handle), None).await;
    let hit = r.json["agents"]
        .as_array()
        .and_then(|h| h.iter().find(|x| x["handle"] == a.handle.as_str()))
        .cloned();
    let fields = hit.map(|h| h["ranking"]["signals"]["matched_fields"].clone()).unwrap_or_default();
    assert!(fields.as_array().is_some_and(|f| f.first() == Some(&json!("handle"))), "{}", r.json);
}

#[tokio::test]
async fn a_server_without_the_model_says_so_and_searches_by_words() {
    for env in
        [[("AGENTDIR_SEARCH_MODE", "words")], [("AGENTDIR_MODEL_PATH", "/nonexistent/e5-small-q4.bin")]]
    {
        let s = Server::start_with(&env).await;
        let ready = s.get("/readyz", None).await;
        ready.expect(200);
        assert_eq!(ready.json["meaning"]["model_loaded"], false, "{env:?}: {}", ready.json);
        let detail = ready.json["meaning"]["detail"].as_str().unwrap();
        assert!(detail.contains("words") || detail.contains("/nonexistent"), "{detail}");
        let t = trades(&s).await;
        // Words still match; meaning does not.
        assert_eq!(handles(&search(&s, "subtitle").await), vec![t.subtitles.handle.clone()]);
        assert!(
            handles(&search(&s, "someone who can turn my podcast into Chinese subtitles").await).is_empty()
        );
        let r = s.get(&format!("/api/agents?q={}&explain=true", q("subtitle")), None).await;
        assert_eq!(r.json["agents"][0]["ranking"]["signals"]["matched_by"], "words");
        // The answer says so too: words because the server searches by words, not because it
        // was busy.
        assert_eq!(r.json["matched_by"], "words");
        assert!(ready.json["meaning"].get("quick_encoder").is_none(), "no model, no quick encoder");
    }
    let s = Server::start().await;
    let ready = s.get("/readyz", None).await;
    assert_eq!(ready.json["meaning"]["model_loaded"], true, "{}", ready.json);
    assert_eq!(ready.json["meaning"]["mode"], "combined");
    // The quick encoder's table: in the tests' servers it is not filled in the background.
    let quick = &ready.json["meaning"]["quick_encoder"];
    assert_eq!(quick["filling"], false, "{quick}");
    assert!(quick["tokens"].as_u64().unwrap() > 200_000, "{quick}");
}

#[tokio::test]
async fn meaning_mode_matches_by_similarity_alone() {
    let s = Server::start_with(&[("AGENTDIR_SEARCH_MODE", "meaning")]).await;
    let t = trades(&s).await;
    let r = s.get(&format!("/api/agents?q={}&explain=true", q("podcast subtitles in Chinese")), None).await;
    assert_eq!(handles(&r).first(), Some(&t.subtitles.handle));
    assert_eq!(r.json["matched_by"], "meaning");
    for hit in r.json["agents"].as_array().unwrap() {
        assert_eq!(hit["ranking"]["signals"]["words"], 0.0);
        assert_eq!(hit["ranking"]["signals"]["matched_by"], "meaning");
    }
}

/// A need read lately is not embedded again: the next page of its agents costs the model
/// nothing and is ranked by meaning like the first (`/metrics` counts the needs remembered).
#[tokio::test]
async fn a_need_read_lately_is_remembered() {
    let s = Server::start().await;
    let t = trades(&s).await;
    agent_with(
        &s,
        "subs2",
        json!({"description_en": "I transcribe podcast episodes and deliver subtitle files in English and Chinese."}),
    )
    .await;
    let remembered = || async {
        let metrics = s.get("/metrics", None).await.text;
        let name = "agentdir_search_meaning_remembered_total ";
        metrics.lines().find_map(|l| l.strip_prefix(name)).map_or(0.0, |v| v.parse::<f64>().unwrap())
    };
    let need = "subtitles for my podcast";
    let page =
        |offset: u32, text: &str| format!("/api/agents?q={}&explain=true&limit=1&offset={offset}", q(text));
    let first = s.get(&page(0, need), None).await;
    first.expect(200);
    assert!(first.json["total"].as_u64().unwrap() >= 2, "{}", first.json);
    assert!(handles(&first).len() == 1 && handles(&first) != [t.tax.handle.clone()], "{}", first.json);
    assert_eq!(remembered().await, 0.0);
    // The next page, and the same need with spaces around it, come from memory.
    for (offset, text) in [(1, need.to_string()), (0, format!("  {need} "))] {
        let r = s.get(&page(offset, &text), None).await;
        r.expect(200);
        assert_eq!(r.json["total"], first.json["total"]);
        assert_eq!(r.json["agents"][0]["ranking"]["signals"]["matched_by"], "combined", "{}", r.json);
    }
    assert_eq!(remembered().await, 2.0);
    // Another need is read by the model.
    search(&s, "someone to check my tax return").await;
    assert_eq!(remembered().await, 2.0);
}

/// Meaning turned on over a directory whose agents and calls have no vectors (an upgrade, a
/// model change): the server answers at once while its workers compute them, and then the
/// agents and calls are found by meaning. `/readyz` counts the agents and calls with a vector.
#[tokio::test]
async fn vectors_missing_at_start_are_computed_while_the_server_serves() {
    let words_only: Vec<(&str, &str)> =
        common::RELAXED_LIMITS.iter().copied().chain([("AGENTDIR_SEARCH_MODE", "words")]).collect();
    let mut before = Server::start_with(&words_only).await;
    let t = trades(&before).await;
    for i in 0..20 {
        agent_with(&before, "more", json!({
            "description_en": format!("Agent {i} of a long list: bookkeeping, payroll and year-end accounts for small firms, with monthly reports and a named accountant who answers questions by email within a day."),
        }))
        .await;
    }
    let poster = before.register("backfill").await;
    let calls = call_trades(&before, &poster).await;
    for i in 0..12 {
        before.seeking(&poster, &format!("Bookkeeping for a shop, month {i}")).await;
    }
    before.stop();
    let s = Server::start_in(&before.data_dir, common::RELAXED_LIMITS).await;
    let need = "someone who can turn my podcast into Chinese subtitles";
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let ready = s.get("/readyz", None).await;
        ready.expect(200);
        // Searches are answered whatever the worker has done so far.
        search(&s, need).await;
        find_calls(&s, &format!("q={}", q("字幕翻译"))).await;
        let meaning = &ready.json["meaning"];
        assert_eq!(meaning["agents"], 26, "{meaning}");
        assert_eq!(meaning["calls"], 16, "{meaning}");
        if meaning["agents_with_vectors"] == meaning["agents"]
            && meaning["calls_with_vectors"] == meaning["calls"]
        {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the worker never computed every vector: {meaning}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(handles(&search(&s, need).await).first(), Some(&t.subtitles.handle));
    let r = find_calls(&s, &format!("q={}", q("字幕翻译"))).await;
    assert_eq!(call_ids(&r).first(), Some(&calls.podcast), "{}", r.json);
}

fn call_ids(r: &common::Resp) -> Vec<String> {
    r.json["posts"].as_array().unwrap().iter().map(|c| c["id"].as_str().unwrap().to_owned()).collect()
}

async fn find_calls(s: &Server, query: &str) -> common::Resp {
    let r = s.get(&format!("/api/posts?{query}"), None).await;
    r.expect(200);
    r
}

/// Waits until the server knows of `calls` visible calls (its follower of the change log may
/// lag the writes) and the call worker has read every one (`/readyz` counts them).
async fn calls_read(s: &Server, calls: u64) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let meaning = s.get("/readyz", None).await.json["meaning"].clone();
        if meaning["calls"] == calls && meaning["calls_with_vectors"] == calls {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "the call worker never read every call: {meaning}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// Calls of four trades, each in one language.
struct CallTrades {
    podcast: String,
    invoices_zh: String,
    bakery_logo: String,
    contract_zh: String,
}

async fn call_trades(s: &Server, author: &Agent) -> CallTrades {
    let post = |kind: &str, title: &str, body: &str, tags: Value| json!({"kind": kind, "title": title, "body": body, "tags": tags});
    CallTrades {
        podcast: s
            .call(author, post("seeking", "Chinese captions for our weekly show",
                "We publish an English podcast every week and want each episode transcribed and translated into Chinese, delivered as SRT files.",
                json!(["audio"])))
            .await,
        invoices_zh: s
            .call(author, post("seeking", "寻找发票录入服务",
                "我们每个月有几百张纸质发票的扫描件，需要把每一行明细录入 Excel 表格。", json!(["财务"])))
            .await,
        bakery_logo: s
            .call(author, post("offering", "Logos for small shops",
                "I draw friendly logos for bakeries, cafés and corner shops, delivered as vector files.",
                json!(["design"])))
            .await,
        contract_zh: s
            .call(author, post("seeking", "需要合同审阅",
                "一份软件外包合同，想请人检查付款条款和违约责任是否合理。", json!(["法律"])))
            .await,
    }
}

/// A call is found by its words the moment its POST is answered, and by meaning (other words,
/// the other language) once the call worker has read it; unrelated calls stay out, filters
/// apply to meaning matches, and a deleted call leaves at once.
#[tokio::test]
async fn calls_are_found_by_meaning_once_the_worker_has_read_them() {
    let s = Server::start().await;
    let author = s.register("poster").await;
    let t = call_trades(&s, &author).await;
    // By words, at once.
    assert_eq!(call_ids(&find_calls(&s, "q=podcast").await), vec![t.podcast.clone()]);
    calls_read(&s, 4).await;
    let cases = [
        ("字幕翻译", &t.podcast),
        ("turn scanned invoices into a spreadsheet", &t.invoices_zh),
        ("someone to check the payment terms of an outsourcing agreement", &t.contract_zh),
        ("商店标志设计", &t.bakery_logo),
    ];
    for (need, want) in cases {
        let r = find_calls(&s, &format!("q={}", q(need))).await;
        let found = call_ids(&r);
        assert_eq!(found.first(), Some(want), "{need}: {}", r.json);
        assert_eq!(r.json["matched_by"], "combined", "{need}");
        assert_eq!(r.json["total"].as_u64().unwrap() as usize, found.len(), "{need}");
        // Nothing of another trade.
        assert!(found.len() <= 2, "{need}: {found:?}");
    }
    // Filters apply to meaning matches too.
    let r = find_calls(&s, &format!("q={}&kind=offering", q("字幕翻译"))).await;
    assert!(!call_ids(&r).contains(&t.podcast), "{}", r.json);
    let r = find_calls(&s, &format!("q={}&tag=AUDIO", q("字幕翻译"))).await;
    assert_eq!(call_ids(&r), vec![t.podcast.clone()]);
    assert_eq!(r.json["total"], 1);
    let r = find_calls(&s, &format!("q={}&tag=design", q("字幕翻译"))).await;
    assert!(!call_ids(&r).contains(&t.podcast), "{}", r.json);
    // Made-up words find no call.
    for need in ["zq86207b2b", "glarbnok frimble zindle"] {
        let r = find_calls(&s, &format!("q={}", q(need))).await;
        assert_eq!(r.json["posts"], json!([]), "{need}: {}", r.json);
        assert_eq!(r.json["total"], 0, "{need}");
    }
    // Deleted: gone from meaning matches at once.
    s.delete(&format!("/api/posts/{}", t.podcast), Some(&author.key)).await.expect(200);
    let r = find_calls(&s, &format!("q={}", q("字幕翻译"))).await;
    assert!(!call_ids(&r).contains(&t.podcast), "{}", r.json);
    // A call posted just after the newest call was deleted is a call of its own (it once took
    // the deleted one's key, and was never read by meaning).
    s.delete(&format!("/api/posts/{}", t.contract_zh), Some(&author.key)).await.expect(200);
    let wheel = s
        .call(
            &author,
            json!({"kind": "seeking", "title": "Repair my bicycle wheel",
            "body": "The rim of my bicycle is bent after a fall; I need it trued or replaced."}),
        )
        .await;
    calls_read(&s, 3).await;
    // Polled: this test's searches came back to back, so a need may be read by the quick
    // encoder while the client's share refills, and it may not know these words yet.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let r = find_calls(&s, &format!("q={}", q("someone who can fix a damaged bike"))).await;
        if call_ids(&r) == vec![wheel.clone()] {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the new call is not found by meaning: {}", r.json);
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
    let r = find_calls(&s, &format!("q={}", q("合同审阅"))).await;
    assert_eq!(call_ids(&r), Vec::<String>::new(), "{}", r.json);
}

/// Pages of a call search by meaning and words add up to its total, each call once; a call
/// that holds the words and is near the need counts once.
#[tokio::test]
async fn call_pages_add_up_to_the_total() {
    let s = Server::start_with(common::RELAXED_LIMITS).await;
    let mut authors = Vec::new();
    for _ in 0..3 {
        authors.push(s.register("many").await);
    }
    for i in 0..24 {
        let (title, body) = match i % 3 {
            0 => (
                format!("Translate our manual, part {i}"),
                "English to Chinese, about twenty pages of a user manual.",
            ),
            1 => (format!("中文翻译 {i}"), "把一份英文产品说明书翻译成中文，大约二十页。"),
            _ => (format!("Bakery logo {i}"), "A friendly logo for our bakery, vector files."),
        };
        s.call(&authors[i % 3], json!({"kind": "seeking", "title": title, "body": body})).await;
    }
    calls_read(&s, 24).await;
    let need = "translate a product manual into Chinese";
    let all = find_calls(&s, &format!("q={}&limit=50", q(need))).await;
    let total = all.json["total"].as_u64().unwrap() as usize;
    assert!(total >= 16, "both languages of the translation calls: {}", all.json);
    assert_eq!(call_ids(&all).len(), total);
    let mut seen = HashSet::new();
    for offset in (0..total).step_by(5) {
        let page = find_calls(&s, &format!("q={}&limit=5&offset={offset}", q(need))).await;
        assert_eq!(page.json["total"].as_u64().unwrap() as usize, total);
        for id in call_ids(&page) {
            assert!(seen.insert(id.clone()), "{id} twice");
        }
    }
    assert_eq!(seen.len(), total);
    assert_eq!(seen, call_ids(&all).into_iter().collect::<HashSet<String>>());
}

/// After a crash the index replays the change log at start, before the calls are loaded: the
/// call vectors already computed are kept, none is computed again.
#[tokio::test]
async fn call_vectors_outlive_a_crash() {
    let mut s = Server::start().await;
    let author = s.register("crash").await;
    call_trades(&s, &author).await;
    calls_read(&s, 4).await;
    // One write more, then a kill before the index is flushed: the next start replays it.
    s.seeking(&author, "Proofreading for a thesis").await;
    s.kill();
    s.restart();
    let meaning = s.get("/readyz", None).await.json["meaning"].clone();
    assert_eq!(meaning["calls"], 5, "{meaning}");
    assert!(meaning["calls_with_vectors"].as_u64().unwrap() >= 4, "vectors lost at start: {meaning}");
    calls_read(&s, 5).await;
    let r = find_calls(&s, &format!("q={}", q("字幕翻译"))).await;
    assert_eq!(r.json["total"].as_u64().unwrap() as usize, call_ids(&r).len());
    assert!(!call_ids(&r).is_empty(), "{}", r.json);
}
