//! The names of services in Chinese, given to the model beside an English need that names them.
//!
//! The model bridges English and Chinese only loosely: "resume writing" lay below 0.18 from the
//! agent that writes 简历 (described in Chinese), and "subtitle translation" ranked the two
//! Chinese subtitle studios 13th and 15th. With the service's Chinese name beside the English
//! one ("resume writing 简历"), both were on the first page, while the agents described in
//! English that fit stayed first. So a short English need (no Chinese in it, at most
//! [`SERVICE_NAMES_WORDS`] words) that names a service of [`SERVICE_NAMES`] is given to the
//! model with the Chinese names added at its end
//! ([`chinese_service_names`], added by `need_part`); docs/search.md, "Service
//! names in Chinese". Profiles keep their own words, and the index's word rule reads the need
//! as written.

use std::sync::LazyLock;

use aho_corasick::AhoCorasick;

use crate::names::{latin_words, whole_words};

/// Each service as an English need names it (matched whole, in any case, a plural `s` or `es`
/// allowed) and its name in Chinese. Words whose service depends on the rest of the need are
/// not here (`audit`: of accounts, of security, of a site; `interview`: for a job or of users;
/// `caption`: subtitles or a post's text), and a longer name comes before the word it holds
/// (`smart contract` is not a 合同).
pub const SERVICE_NAMES: &[(&str, &str)] = &[
    // Language, voice and video.
    ("translation", "翻译"),
    ("translate", "翻译"),
    ("translator", "翻译"),
    ("localization", "本地化"),
    ("localisation", "本地化"),
    ("subtitle", "字幕"),
    ("transcription", "转写"),
    ("transcribe", "转写"),
    ("interpreter", "口译"),
    ("voice-over", "配音"),
    ("voiceover", "配音"),
    ("dubbing", "配音"),
    ("audiobook", "有声书"),
    ("podcast", "播客"),
    ("video editing", "视频剪辑"),
    ("proofreading", "校对"),
    ("copywriting", "文案"),
    ("ghostwriting", "代写"),
    // Design and images.
    ("logo", "标志"),
    ("poster", "海报"),
    ("photo retouching", "修图"),
    ("retouching", "修图"),
    ("illustration", "插画"),
    ("packaging design", "包装设计"),
    ("interior design", "室内设计"),
    // Work, study and careers.
    ("resume", "简历"),
    ("cover letter", "求职信"),
    ("job description", "招聘"),
    ("recruiting", "招聘"),
    ("recruitment", "招聘"),
    ("tutoring", "辅导"),
    ("tutor", "辅导"),
    ("homework", "作业"),
    ("thesis", "论文"),
    ("literature review", "文献综述"),
    ("essay", "文书"),
    ("exam prep", "备考"),
    ("study abroad", "留学"),
    // Money, law and paperwork.
    ("bookkeeping", "记账"),
    ("accounting", "会计"),
    ("tax return", "报税"),
    ("tax filing", "报税"),
    ("payroll", "工资核算"),
    ("invoice", "发票"),
    ("reimbursement", "报销"),
    ("contract", "合同"),
    ("lawyer", "律师"),
    ("trademark", "商标"),
    ("patent", "专利"),
    ("copyright", "版权"),
    ("visa", "签证"),
    ("immigration", "移民"),
    ("company registration", "公司注册"),
    ("social insurance", "社保"),
    ("customs", "报关"),
    // Trade, shops and marketing.
    ("freight", "货代"),
    ("shipping", "物流"),
    ("logistics", "物流"),
    ("parcel", "包裹"),
    ("warehouse", "仓库"),
    ("e-commerce", "电商"),
    ("ecommerce", "电商"),
    ("product listing", "商品详情页"),
    ("customer service", "客服"),
    ("customer support", "客服"),
    ("chatbot", "智能客服"),
    ("SEO", "搜索引擎优化"),
    ("advertising", "广告投放"),
    ("social media", "社交媒体运营"),
    ("livestream", "直播"),
    ("live streaming", "直播"),
    ("influencer", "达人"),
    ("email marketing", "邮件营销"),
    ("market research", "市场调研"),
    ("reviews", "评价"),
    // Software and data.
    ("code review", "代码评审"),
    ("smart contract", "智能合约"),
    ("software testing", "软件测试"),
    ("penetration test", "渗透测试"),
    ("security audit", "安全审计"),
    ("website", "网站"),
    ("mini program", "小程序"),
    ("app development", "应用开发"),
    ("database", "数据库"),
    ("backup", "备份"),
    ("monitoring", "监控"),
    ("server", "服务器"),
    ("cloud", "云"),
    ("web scraping", "数据采集"),
    ("scraping", "数据采集"),
    ("data annotation", "数据标注"),
    ("data labeling", "数据标注"),
    ("data labelling", "数据标注"),
    ("dashboard", "数据看板"),
    ("data analysis", "数据分析"),
    ("spreadsheet", "表格"),
    ("OCR", "文字识别"),
    ("automation", "自动化"),
    // Health and daily life.
    ("fitness", "健身"),
    ("personal trainer", "私教"),
    ("diet", "饮食"),
    ("nutrition", "营养"),
    ("sleep", "睡眠"),
    ("yoga", "瑜伽"),
    ("psychological counseling", "心理咨询"),
    ("travel itinerary", "行程规划"),
    ("wedding", "婚礼"),
];

static SERVICES: LazyLock<AhoCorasick> = LazyLock::new(|| latin_words(SERVICE_NAMES));

/// The most words (split at anything that is not a letter or a digit) of a need that gains the
/// Chinese names of its services: a keyword or a sentence of need. Longer needs (a situation in
/// 2–4 sentences) lost with them on both judged sets (long situations 0.58 → 0.53 and 0.70 →
/// 0.69), their pages drifting to Chinese-only agents of other trades; docs/search.md.
pub const SERVICE_NAMES_WORDS: usize = 10;

/// The Chinese names of the services of [`SERVICE_NAMES`] that `text` names, each once, in the
/// order named, joined by spaces; `None` when it names none, holds Chinese already or is longer
/// than [`SERVICE_NAMES_WORDS`].
pub fn chinese_service_names(text: &str) -> Option<String> {
    let words = text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).count();
    if words > SERVICE_NAMES_WORDS || crate::chinese_share(text) > 0.0 {
        return None;
    }
    let mut added: Vec<&str> = Vec::new();
    // A plural of the name counts as the name.
    for m in whole_words(&SERVICES, text, &[b"es", b"s", b""]) {
        let chinese = SERVICE_NAMES[m.pattern().as_usize()].1;
        if !added.contains(&chinese) {
            added.push(chinese);
        }
    }
    (!added.is_empty()).then(|| added.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn english_needs_that_name_a_service_gain_its_chinese_name() {
        assert_eq!(chinese_service_names("resume writing").as_deref(), Some("简历"));
        assert_eq!(
            chinese_service_names("Subtitles and a translation, more subtitles").as_deref(),
            Some("字幕 翻译")
        );
        assert_eq!(chinese_service_names("two patents").as_deref(), Some("专利"));
    }

    #[test]
    fn other_needs_are_left_as_they_are() {
        let long = "We need subtitles for a documentary of twelve hours of interviews in Mandarin.";
        for text in ["简历 writing", "resumed work", "subtitled", "no service named here", "", long] {
            assert_eq!(chinese_service_names(text), None, "{text}");
        }
    }
}
