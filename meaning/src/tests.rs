use super::*;
use crate::engine::Prefix;

fn model() -> Option<Model> {
    let path = built_in_weights()?;
    Some(Model::load(path).expect("the built-in weights load"))
}

fn cos(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[test]
fn a_need_is_nearer_the_agent_that_meets_it_in_either_language() {
    let Some(m) = model() else {
        assert!(unavailable_reason().is_some(), "no weights and no reason given");
        return;
    };
    let need_en = m.embed_query("someone who can turn my podcast into Chinese subtitles").unwrap();
    let need_zh = m.embed_query("播客音频转写并翻译成中文字幕").unwrap();
    let agents = m
        .embed_passages(&[
            "Audio transcription and translation into Chinese; subtitle files (SRT) for video and podcasts.",
            "代码评审：审查 Rust 和 Go 代码的安全问题",
            "Tax filing for small businesses in Germany.",
        ])
        .unwrap();
    for need in [&need_en, &need_zh] {
        assert_eq!(need.len(), DIM);
        assert!((cos(need, need) - 1.0).abs() < 1e-3, "unit length");
        assert!(cos(need, &agents[0]) > cos(need, &agents[1]));
        assert!(cos(need, &agents[0]) > cos(need, &agents[2]));
    }
}

#[test]
fn a_missing_weights_file_is_an_error_not_a_crash() {
    assert!(Model::load(std::path::Path::new("/nonexistent/e5.bin")).is_err());
}

#[test]
fn the_matrix_finds_rows_above_the_threshold_and_forgets_removed_ones() {
    let unit = |i: usize| {
        let mut v = vec![0f32; DIM];
        v[i] = 1.0;
        Quantized::new(&v)
    };
    let mut m = Matrix::default();
    for k in 0..4u64 {
        m.upsert(k, &unit(k as usize), k);
    }
    let q = unit(2);
    let hits = m.search(&q, 0.5, |_| true);
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].key, 2);
    assert!((hits[0].similarity - 1.0).abs() < 0.01);
    m.remove(0);
    assert_eq!(m.len(), 3);
    assert_eq!(m.search(&unit(3), 0.5, |_| true)[0].key, 3);
    assert!(m.search(&q, 0.5, |a| *a != 2).is_empty());
    let back = Quantized::from_bytes(&unit(5).to_bytes()).unwrap();
    assert_eq!(back, unit(5));
    assert!(Quantized::from_bytes(&[1, 2, 3]).is_none());
}

#[test]
fn the_fast_scan_scores_every_row_as_the_plain_similarity_does() {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut random = || {
        let v: Vec<f32> = (0..DIM)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state % 2001) as f32 / 1000.0 - 1.0
            })
            .collect();
        Quantized::new(&v)
    };
    let mut m = Matrix::default();
    for k in 0..300u64 {
        m.upsert(k, &random(), ());
    }
    let q = random();
    let hits = m.search(&q, f32::NEG_INFINITY, |_| true);
    assert_eq!(hits.len(), 300);
    for hit in hits {
        assert_eq!(Some(hit.similarity), m.similarity(&q, hit.key));
    }
}

#[test]
fn a_static_need_is_nearest_the_agent_that_meets_it_in_either_language() {
    let Some(m) = model() else { return };
    let encoder = NeedEncoder::new(&m);
    let agents = m
        .embed_passages(&[
            "Contract review for small businesses: we mark legal risks in your contracts and suggest changes.",
            "代码评审：审查 Rust 和 Go 代码中的安全问题与性能问题，给出修改建议。",
            "Prepares annual tax returns for freelancers and small businesses in Germany.",
            "为中小企业审阅合同，标注法律风险并提出修改意见。",
            "我们为播客和视频制作中文字幕，交付 SRT 文件。",
            "Logo and brand identity design for startups.",
            "为电商店铺拍摄产品照片并精修。",
            "Bookkeeping and monthly financial statements for small companies.",
        ])
        .unwrap();
    // Nearest, and near enough for the core's nearest fill (`NEAREST_FLOOR`): the level is
    // what centring by the static vectors' own centres gives (uncentred, these are ~0).
    let near = 0.12;
    for (need, fits) in [
        ("review my Go code for security bugs", 1),
        ("someone to check my contract for legal risks", 0),
        ("subtitles for my podcast", 4),
        ("design a logo for my startup", 5),
        ("报税", 2),
        ("记账", 7),
        ("我需要一个新的品牌标志", 5),
        ("找人帮我审一下合同", 3),
    ] {
        let v = encoder.embed(&m, need).unwrap();
        assert_eq!(v.len(), DIM);
        assert!((cos(&v, &v) - 1.0).abs() < 1e-3, "unit length");
        let sims: Vec<f32> = agents.iter().map(|a| cos(&v, a)).collect();
        let nearest = (0..sims.len()).max_by(|a, b| sims[*a].total_cmp(&sims[*b])).unwrap();
        assert_eq!(nearest, fits, "{need}: {sims:?}");
        assert!(sims[fits] >= near, "{need}: {sims:?}");
    }
    // Across languages, above an agent of the need's own language that does something else.
    let v = encoder.embed(&m, "找人帮我审一下合同").unwrap();
    assert!(cos(&v, &agents[0]) >= near && cos(&v, &agents[0]) > cos(&v, &agents[1]));
}

#[test]
fn a_static_need_reads_the_part_the_full_model_reads() {
    let Some(m) = model() else { return };
    let encoder = NeedEncoder::new(&m);
    let long = "translate my product pages into Chinese ".repeat(60);
    let cut: String = long.chars().take(MAX_PASSAGE_CHARS).collect();
    assert_eq!(encoder.embed(&m, &long).unwrap(), encoder.embed(&m, &cut).unwrap());
    assert_eq!(encoder.embed(&m, "tax\0filing").unwrap(), encoder.embed(&m, "tax filing").unwrap());
    assert!(encoder.embed(&m, "").unwrap().iter().all(|x| *x == 0.0), "no tokens, near nothing");
    assert_eq!(encoder.embed(&m, "   ").unwrap(), vec![0.0; DIM]);
}

#[test]
fn token_count_counts_what_the_model_reads() {
    let Some(m) = model() else { return };
    let need = "contract review";
    let count = m.token_count(need, true).unwrap();
    assert_eq!(
        count,
        m.tokens(need, Prefix::Query).unwrap().len() + 2,
        "the prefix, the text and two specials"
    );
    assert_eq!(m.tokens(need, Prefix::None).unwrap().len() + 3 + 2, count, "\"query:\" is three tokens");
    assert_eq!(m.token_count(need, false).unwrap(), m.tokens(need, Prefix::Passage).unwrap().len() + 2);
    assert!(m.token_count("我需要一个能审查合同的律师", true).unwrap() > count);
    let long = "word ".repeat(1_000);
    let cut: String = long.chars().take(MAX_PASSAGE_CHARS).collect();
    assert_eq!(m.token_count(&long, true).unwrap(), m.token_count(&cut, true).unwrap(), "only the part read");
    assert!(m.token_count(&long, true).unwrap() > 250);
}

#[test]
fn a_need_is_read_to_the_model_s_own_limit_with_the_vector_the_engine_gives() {
    let Some(m) = model() else { return };
    for need in [
        "contract review",
        "播客音频转写并翻译成中文字幕",
        "someone who can turn my podcast into Chinese subtitles",
    ] {
        let tokens = m.need_tokens(need).unwrap();
        // The model is given the need's part: for the English needs here, with the Chinese
        // names of the services they name (`contract review 合同`).
        let part = crate::need_part(need);
        assert_eq!(part != need, crate::chinese_share(need) == 0.0, "{need}: {part}");
        assert_eq!(tokens.cost() as usize, m.token_count(&part, true).unwrap());
        let engine = centred(m.embed_raw(&[&part], true).unwrap().pop().unwrap(), &part, true);
        // Every position weighing 1: the engine's own mean.
        let mean = m.embed_need_weighted(&tokens, 1.0, 1.0).unwrap();
        assert!(cos(&mean, &engine) > 0.99999, "{need}: {}", cos(&mean, &engine));
        // The prefix's tokens are told from the need's own.
        assert_ne!(m.embed_need_weighted(&tokens, 1.0, 0.5).unwrap(), mean, "{need}");
        // The need's vector weighs the specials and the prefix less: near it, not it.
        let read = m.embed_need(&tokens).unwrap();
        assert_eq!(read, m.embed_query(need).unwrap());
        let near = cos(&read, &engine);
        assert!(near > 0.9 && near < 0.9999, "{need}: {near}");
    }
    // Past the 1,500 characters a profile is cut at, a need is read on to one window.
    let sentence = "Our shop sells handmade ceramics and we need every product page translated. ";
    let long = sentence.repeat(40);
    let tokens = m.need_tokens(&long).unwrap();
    assert_eq!(tokens.cost() as usize, WINDOW_TOKENS, "one window, specials included");
    assert!(m.token_count(&long, true).unwrap() < WINDOW_TOKENS, "a profile's cut reads less");
    // Past the character bound nothing more is read.
    let longer = format!("{}{}", "x ".repeat(MAX_NEED_CHARS / 2), "and then something else");
    assert_eq!(m.need_tokens(&longer).unwrap(), m.need_tokens(&"x ".repeat(MAX_NEED_CHARS / 2)).unwrap());
    assert_eq!(m.need_tokens("tax\0filing").unwrap(), m.need_tokens("tax filing").unwrap());
}

#[test]
fn a_token_distilled_alone_or_among_others_has_the_same_row() {
    let Some(m) = model() else { return };
    let need = "bookkeeping for a bakery";
    let alone = NeedEncoder::new(&m);
    let a = alone.embed(&m, need).unwrap();
    let among = NeedEncoder::new(&m);
    among.embed(&m, "monthly bookkeeping and payroll for a small bakery in Lyon, 面包店记账").unwrap();
    assert!(among.vocab_len() - among.missing() > alone.vocab_len() - alone.missing());
    assert_eq!(among.embed(&m, need).unwrap(), a, "bit for bit, whatever the batch");
}

#[test]
fn a_need_embedded_without_distilling_leaves_out_the_tokens_not_yet_distilled() {
    let Some(m) = model() else { return };
    let encoder = NeedEncoder::new(&m);
    let need = "translate my podcast into Chinese subtitles";
    let tokens = m.tokens(need, Prefix::None).unwrap().len();
    let (v, missing) = encoder.embed_known(&m, need).unwrap();
    assert_eq!((missing, encoder.missing()), (tokens, encoder.vocab_len()), "nothing was distilled");
    assert!(v.iter().all(|x| *x == 0.0));
    encoder.embed(&m, "translate my podcast").unwrap();
    let (partial, missing) = encoder.embed_known(&m, need).unwrap();
    assert!(missing > 0 && missing < tokens, "{missing} of {tokens}");
    assert!((cos(&partial, &partial) - 1.0).abs() < 1e-3);
    let full = encoder.embed(&m, need).unwrap();
    assert_eq!(encoder.embed_known(&m, need).unwrap(), (full, 0));
}

#[test]
fn a_saved_table_loads_back_and_a_damaged_one_is_refused() {
    let Some(m) = model() else { return };
    let dir = std::env::temp_dir().join(format!("agentdir-need-table-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("need-encoder.table");
    let encoder = NeedEncoder::new(&m);
    let needs = ["subtitle translation", "代码审查", "someone to check my contract for legal risks"];
    let before: Vec<Vec<f32>> = needs.iter().map(|n| encoder.embed(&m, n).unwrap()).collect();
    encoder.save(&path).unwrap();
    let loaded = NeedEncoder::load(&m, &path).unwrap();
    assert_eq!(loaded.missing(), encoder.missing(), "only what was distilled");
    for (n, v) in needs.iter().zip(&before) {
        assert_eq!(&loaded.embed(&m, n).unwrap(), v);
    }
    assert_eq!(loaded.missing(), encoder.missing(), "nothing distilled again");
    let bytes = std::fs::read(&path).unwrap();
    let damaged = [
        bytes[..bytes.len() - 1].to_vec(),
        [bytes.as_slice(), &[0]].concat(),
        [b"XXXXXXXX".as_slice(), &bytes[8..]].concat(),
        bytes[..20].to_vec(),
        Vec::new(),
    ];
    for (i, d) in damaged.iter().enumerate() {
        std::fs::write(&path, d).unwrap();
        assert!(NeedEncoder::load(&m, &path).is_err(), "damage {i} refused");
    }
    assert!(NeedEncoder::load(&m, &dir.join("absent")).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_model_refuses_sequences_it_cannot_read() {
    let Some(m) = model() else { return };
    let vocab = m.vocabulary();
    let s = vocab.specials();
    assert!(m.hidden_states(&[]).is_err());
    assert!(m.hidden_states(&[&[]]).is_err());
    assert!(m.hidden_states(&[&[s.bos, 1_000_000, s.eos]]).is_err(), "an id past the vocabulary");
    assert!(m.hidden_states(&[&[s.bos, u32::MAX, s.eos]]).is_err());
    assert!(m.hidden_states(&[&vec![s.bos; 10_000]]).is_err(), "longer than the model reads");
    let states = m.hidden_states(&[&[s.bos, 100, s.eos], &[s.bos, s.eos]]).unwrap();
    assert_eq!(states.len(), 5 * DIM);
    assert!(vocab.piece(vocab.len() as u32).is_none());
    assert_eq!(vocab.piece(s.unk).unwrap().0, b"<unk>");
}

/// Unit vectors around a few hundred centres, as profiles of a few trades are: most pairs far
/// apart, some near, and every similarity level between populated.
struct Clustered {
    state: u64,
    centres: Vec<Vec<f32>>,
}

impl Clustered {
    fn new(seed: u64, centres: usize) -> Clustered {
        let mut c = Clustered { state: seed | 1, centres: Vec::new() };
        c.centres = (0..centres).map(|_| c.gaussian()).collect();
        c
    }

    fn next(&mut self) -> u64 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        self.state
    }

    fn gaussian(&mut self) -> Vec<f32> {
        (0..DIM)
            .map(|_| {
                let u = ((self.next() >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
                let v = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
                ((-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()) as f32
            })
            .collect()
    }

    fn vector(&mut self, centre_weight: f32) -> Quantized {
        let k = (self.next() % self.centres.len() as u64) as usize;
        let noise = self.gaussian();
        let v: Vec<f32> = self.centres[k].iter().zip(&noise).map(|(c, n)| centre_weight * c + n).collect();
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        Quantized::new(&v.iter().map(|x| x / norm).collect::<Vec<f32>>())
    }
}

/// What `nearest` must give: the exact scan's hits, nearest first, equal similarities by key.
fn sorted_scan<A>(m: &Matrix<A>, q: &Quantized, floor: f32, keep: impl Fn(&A) -> bool) -> Vec<Hit> {
    let mut hits = m.search(q, floor, keep);
    hits.sort_by(|a, b| b.similarity.total_cmp(&a.similarity).then(a.key.cmp(&b.key)));
    hits
}

#[test]
fn the_nearest_rows_come_in_the_exact_order_of_the_full_scan() {
    let mut profiles = Clustered::new(0x5eed, 40);
    let mut m = Matrix::default();
    for k in 0..6_000u64 {
        m.upsert(k, &profiles.vector(0.9), k);
    }
    // Copies: equal similarities, ordered by key.
    for k in 0..50u64 {
        let copy = Quantized { scale: 1.0, values: m.row(k as usize).to_vec() };
        m.upsert(100_000 + k, &copy, 100_000 + k);
        m.upsert(200_000 + k, &copy, 200_000 + k);
    }
    for i in 0..24 {
        let q = profiles.vector(if i % 3 == 0 { 0.0 } else { 1.2 });
        let keep = |k: &u64| k % 7 != 3;
        for floor in [0.12, 0.18, 0.3, -1.0] {
            let expected = sorted_scan(&m, &q, floor, keep);
            for want in [1, 10, 1_000, usize::MAX] {
                for threads in [None, Some(1), Some(3)] {
                    let mut stream = m.nearest_on(threads, &q, floor, want, keep);
                    let got: Vec<Hit> = stream.by_ref().collect();
                    assert_eq!(got.len(), expected.len(), "query {i} floor {floor} want {want}");
                    assert!(got == expected, "query {i} floor {floor} want {want} threads {threads:?}");
                    assert!(stream.stats().candidates <= m.len());
                }
                // Taking only the first few reads fewer rows and gives the same first few.
                let few: Vec<Hit> = m.nearest(&q, floor, want, keep).take(want.min(20)).collect();
                assert_eq!(few[..], expected[..want.min(20).min(expected.len())]);
            }
        }
    }
}

#[test]
fn the_first_pass_reads_few_rows_in_full_when_few_are_wanted() {
    let mut profiles = Clustered::new(0xfeed, 30);
    let mut m = Matrix::default();
    for k in 0..20_000u64 {
        m.upsert(k, &profiles.vector(1.0), ());
    }
    let q = profiles.vector(1.0);
    let mut stream = m.nearest(&q, 0.12, 100, |_| true);
    let first: Vec<Hit> = stream.by_ref().take(100).collect();
    assert_eq!(first, sorted_scan(&m, &q, 0.12, |_| true)[..100]);
    let stats = stream.stats();
    assert_eq!(stats.passes, 1);
    assert!(stats.rescored < 2_000, "{stats:?}");
    assert!(stats.max_deviations < crate::nearest::SURPRISE_SIGMAS, "{stats:?}");
}

#[test]
fn the_planes_keep_every_row_exactly_through_upserts_and_removals() {
    let mut profiles = Clustered::new(0xabcd, 10);
    let mut m = Matrix::default();
    let mut kept = std::collections::HashMap::new();
    for k in 0..2_000u64 {
        let v = profiles.vector(0.5);
        m.upsert(k, &v, ());
        kept.insert(k, v);
    }
    // Replace some rows, remove others (the last row moves into each hole).
    for k in (0..2_000u64).step_by(3) {
        let v = profiles.vector(0.5);
        m.upsert(k, &v, ());
        kept.insert(k, v);
    }
    for k in (1..2_000u64).step_by(5) {
        m.remove(k);
        kept.remove(&k);
    }
    // Extreme values keep their nibbles.
    let mut edge = vec![0i8; DIM];
    edge[0] = 127;
    edge[1] = -127;
    edge[2] = -128;
    edge[DIM - 1] = -1;
    edge[DIM - 2] = 16;
    let edge = Quantized { scale: 0.01, values: edge };
    m.upsert(9_999, &edge, ());
    kept.insert(9_999, edge);
    assert_eq!(m.len(), kept.len());
    let q = profiles.vector(0.5);
    let plain = |a: &Quantized, b: &Quantized| {
        let dot: i32 = a.values.iter().zip(&b.values).map(|(x, y)| i32::from(*x) * i32::from(*y)).sum();
        dot as f32 * a.scale * b.scale
    };
    for (k, v) in &kept {
        assert_eq!(m.similarity(&q, *k), Some(plain(&q, v)), "row {k}");
        let (row, edge) = (m.unpacked(*k).expect("kept"), m.unpacked(9_999).expect("kept"));
        assert_eq!(row.similarity(&edge), plain(v, &kept[&9_999]), "row {k}");
    }
    let all: Vec<Hit> = m.nearest(&q, -1.0, 10, |_| true).collect();
    assert_eq!(all.len(), kept.len());
    assert_eq!(all, sorted_scan(&m, &q, -1.0, |_| true));
    // More threads than rows make sense for: the same rows.
    let mut few = Matrix::default();
    for k in 0..9u64 {
        few.upsert(k, &profiles.vector(0.5), ());
    }
    let expected = sorted_scan(&few, &q, -1.0, |_| true);
    for threads in [1, 4, 8, 9, 100] {
        assert_eq!(few.nearest_on(Some(threads), &q, -1.0, 3, |_| true).collect::<Vec<Hit>>(), expected);
    }
    assert!(Matrix::<()>::default().nearest(&q, -1.0, 10, |_| true).next().is_none());
    assert!(m.nearest(&q, 2.0, 10, |_| true).next().is_none());
}

#[test]
fn every_kernel_computes_the_same_products_as_plain_code() {
    use crate::matrix::{HALF, Kernel, Plain, Query};
    let mut profiles = Clustered::new(0x7777, 5);
    let mut m = Matrix::default();
    for k in 0..62u64 {
        m.upsert(k, &profiles.vector(0.5), ());
    }
    // The extremes, where pair sums are largest: every nibble 15 or 0 against ±128.
    m.upsert(62, &Quantized { scale: 1.0, values: vec![127; DIM] }, ());
    m.upsert(63, &Quantized { scale: 1.0, values: vec![-128; DIM] }, ());
    let queries = [
        Query::of(&profiles.vector(0.5)),
        Query::of(&Quantized { scale: 1.0, values: vec![-128; DIM] }),
        Query::of(&Quantized { scale: 1.0, values: vec![127; DIM] }),
    ];
    for q in &queries {
        for plane in [&m.high, &m.low] {
            for rows in plane.chunks_exact(8 * HALF) {
                let plain: Vec<i32> = rows
                    .chunks_exact(HALF)
                    .map(|row| {
                        let value = |j: usize| {
                            let nibble = if j < HALF { row[j] & 15 } else { row[j - HALF] >> 4 };
                            let q = if j < HALF { q.first[j] } else { q.second[j - HALF] };
                            i32::from(q) * i32::from(nibble)
                        };
                        (0..DIM).map(value).sum()
                    })
                    .collect();
                assert_eq!(Plain::dot8(q, rows)[..], plain[..]);
                assert_eq!(Plain::dot(q, &rows[..HALF]), plain[0]);
                #[cfg(target_arch = "x86_64")]
                if std::is_x86_feature_detected!("avx2") {
                    use crate::matrix::Avx2;
                    assert_eq!(Avx2::dot8(q, rows)[..], plain[..]);
                    assert_eq!(Avx2::dot(q, &rows[7 * HALF..]), plain[7]);
                }
                #[cfg(all(target_arch = "x86_64", avx512_kernels))]
                if crate::matrix::Vnni::detected() {
                    use crate::matrix::Vnni;
                    assert_eq!(Vnni::dot8(q, rows)[..], plain[..]);
                    assert_eq!(Vnni::dot(q, &rows[3 * HALF..]), plain[3]);
                }
            }
        }
    }
}

#[test]
fn a_long_english_situation_is_not_drawn_to_chinese_profiles_of_other_trades() {
    let Some(m) = model() else { return };
    let agents = m
        .embed_passages(&[
            "Garden Planner\nDesigns small gardens and balconies: plant lists for sun and shade, watering plans, seasonal care calendars.",
            "Wedding Films\nShoots and edits wedding videos: highlight reels, full ceremony cuts, drone shots.",
            "Local Listings\nGets shops and restaurants onto Google Maps and local search: business profiles, reviews, opening hours.",
            "合同审查助手\n为中小企业审阅采购合同和劳动合同，标注法律风险，给出修改建议。",
            "小红书运营\n代运营小红书账号：选题、写笔记、配图、回复评论，每周出数据报告。",
            "个税申报助手\n帮上班族办理个人所得税年度汇算，核对专项附加扣除。",
            "跨境物流追踪\n追踪国际快递和海运集装箱，异常件提醒，对接清关。",
            "招聘文案\n为企业撰写招聘JD，优化岗位描述，筛选简历。",
            "语音转写助手\n把会议录音、采访录音转成文字稿，区分说话人。",
        ])
        .unwrap();
    // Centred alone, these lean 0.10 to 0.17 toward Chinese profiles; the third's fitting agent
    // is then only 0.015 above a Chinese profile of logistics.
    for (need, fits) in [
        (
            "Our new flat has a north-facing balcony and everything we planted last spring died within a month. \
             We would like something green out there that survives with little sun and a busy couple who forget \
             to water. Where do we even start?",
            0,
        ),
        (
            "My sister is getting married in June and the photographer she booked has just cancelled on her. \
             She still wants something to remember the day by, moving pictures and sound, not only photos. \
             The venue is a farm two hours out of town.",
            1,
        ),
        (
            "I opened a small noodle bar two streets from the station last year. Tourists walk past every day \
             but nobody finds us when they search on their phones for somewhere to eat nearby. We are not on \
             the map at all.",
            2,
        ),
    ] {
        let v = m.embed_query(need).unwrap();
        assert!((cos(&v, &v) - 1.0).abs() < 1e-3, "unit length");
        assert!((language_lean(&v) - NEED_LEAN).abs() < 1e-4, "{need}: lean {}", language_lean(&v));
        let sims: Vec<f32> = agents.iter().map(|a| cos(&v, a)).collect();
        for (i, s) in sims.iter().enumerate().skip(3) {
            assert!(sims[fits] - s >= 0.05, "{need}: Chinese profile {i} near the one that fits: {sims:?}");
        }
    }
}
