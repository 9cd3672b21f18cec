//! Chinese names spelt in Latin letters, read by the model in Chinese characters.
//!
//! The model learnt `小红书` from Chinese text, but `Xiaohongshu` only as pinyin pieces
//! (`▁Xia` `oh` `ong` `shu`) that say nothing: "grow our followers on Xiaohongshu" lay 0.16 from
//! the agent that runs Xiaohongshu accounts (described in Chinese) and 0.29 with the name read
//! as `小红书`. Platforms, places, exams and documents of China are what English needs name when
//! they want an agent described only in Chinese, so a need's names in this table are read in
//! Chinese ([`read_names`], applied by `need_part`; docs/search.md, "Chinese names spelt in
//! Latin letters"). Only a need is read so; profiles keep their own words, and the index's word
//! rule still matches the name as written.
//!
//! Not here: names the English of a profile says the same way (Hong Kong, Amazon), common nouns
//! (China, Chinese: the lean, not the name, decides those), and short forms that are also
//! English (`JD` is a job description as often as the shop, `RED` a colour).

use std::borrow::Cow;
use std::sync::LazyLock;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, Match, MatchKind};

/// Each name as an English need spells it (matched whole, in any case) and in Chinese.
pub const CHINESE_NAMES: &[(&str, &str)] = &[
    // Platforms, shops and apps.
    ("Xiaohongshu", "小红书"),
    ("RedNote", "小红书"),
    ("Douyin", "抖音"),
    ("Kuaishou", "快手"),
    ("Weibo", "微博"),
    ("WeChat Pay", "微信支付"),
    ("WeChat", "微信"),
    ("Weixin", "微信"),
    ("WeCom", "企业微信"),
    ("Taobao", "淘宝"),
    ("Tmall", "天猫"),
    ("JD.com", "京东"),
    ("Jingdong", "京东"),
    ("Pinduoduo", "拼多多"),
    ("Alipay", "支付宝"),
    ("Meituan", "美团"),
    ("Dianping", "大众点评"),
    ("Ele.me", "饿了么"),
    ("Bilibili", "哔哩哔哩"),
    ("Zhihu", "知乎"),
    ("Douban", "豆瓣"),
    ("Xianyu", "闲鱼"),
    ("Ctrip", "携程"),
    ("Fliggy", "飞猪"),
    ("Xiaoyuzhou", "小宇宙"),
    ("Ximalaya", "喜马拉雅"),
    ("Toutiao", "今日头条"),
    ("Baidu", "百度"),
    ("Feishu", "飞书"),
    ("DingTalk", "钉钉"),
    ("Alibaba Cloud", "阿里云"),
    ("Aliyun", "阿里云"),
    ("Tencent Cloud", "腾讯云"),
    ("Huawei Cloud", "华为云"),
    ("Alibaba", "阿里巴巴"),
    ("Tencent", "腾讯"),
    ("Youku", "优酷"),
    ("iQiyi", "爱奇艺"),
    ("Amap", "高德地图"),
    ("Gaode", "高德地图"),
    ("Vipshop", "唯品会"),
    ("Dewu", "得物"),
    ("Youzan", "有赞"),
    ("Weidian", "微店"),
    ("Kingdee", "金蝶"),
    ("Yonyou", "用友"),
    ("Boss Zhipin", "BOSS直聘"),
    ("Zhaopin", "智联招聘"),
    ("Liepin", "猎聘"),
    // Institutions, exams, documents and schemes.
    ("CNIPA", "国家知识产权局"),
    ("SAMR", "市场监督管理局"),
    ("NMPA", "国家药品监督管理局"),
    ("MLPS", "等级保护"),
    ("PIPL", "个人信息保护法"),
    ("gaokao", "高考"),
    ("zhongkao", "中考"),
    ("kaoyan", "考研"),
    ("hukou", "户口"),
    ("fapiao", "发票"),
    ("fapiaos", "发票"),
    ("shebao", "社保"),
    ("gongjijin", "公积金"),
    ("WFOE", "外商独资企业"),
    ("putonghua", "普通话"),
    ("hanfu", "汉服"),
    ("hongbao", "红包"),
    // Places.
    ("Beijing", "北京"),
    ("Shanghai", "上海"),
    ("Shenzhen", "深圳"),
    ("Guangzhou", "广州"),
    ("Hangzhou", "杭州"),
    ("Chengdu", "成都"),
    ("Chongqing", "重庆"),
    ("Wuhan", "武汉"),
    ("Nanjing", "南京"),
    ("Suzhou", "苏州"),
    ("Tianjin", "天津"),
    ("Xi'an", "西安"),
    ("Xiamen", "厦门"),
    ("Qingdao", "青岛"),
    ("Dongguan", "东莞"),
    ("Ningbo", "宁波"),
    ("Yiwu", "义乌"),
    ("Foshan", "佛山"),
    ("Changsha", "长沙"),
    ("Zhengzhou", "郑州"),
    ("Kunming", "昆明"),
    ("Guangdong", "广东"),
    ("Zhejiang", "浙江"),
    ("Jiangsu", "江苏"),
    ("Fujian", "福建"),
    ("Sichuan", "四川"),
    ("Yunnan", "云南"),
    ("Hainan", "海南"),
    ("Shandong", "山东"),
    ("Hubei", "湖北"),
    ("Hunan", "湖南"),
];

static NAMES: LazyLock<AhoCorasick> = LazyLock::new(|| latin_words(CHINESE_NAMES));

/// The Chinese of the names of [`CHINESE_NAMES`] and of the services of
/// [`SERVICE_NAMES`](crate::SERVICE_NAMES), those of two characters or more (`云` alone would
/// be found in every word that holds it).
static IN_CHINESE: LazyLock<AhoCorasick> = LazyLock::new(|| {
    let names = CHINESE_NAMES.iter().chain(crate::SERVICE_NAMES).map(|(_, chinese)| *chinese);
    AhoCorasick::new(names.filter(|chinese| chinese.chars().count() > 1))
        .expect("a list of words builds an automaton")
});

/// Whether `text` holds the Chinese of a name or a service of the lists a need is read with
/// (`微信`, `小红书`, `哔哩哔哩`): words the directory knows whatever a dictionary holds.
pub fn names_in_chinese(text: &str) -> bool {
    IN_CHINESE.is_match(text)
}

/// An automaton that finds the first words of `pairs` in a text, in any case, the longest where
/// several start at one place (`WeChat Pay` before `WeChat`).
pub(crate) fn latin_words(pairs: &[(&str, &str)]) -> AhoCorasick {
    AhoCorasickBuilder::new()
        .ascii_case_insensitive(true)
        .match_kind(MatchKind::LeftmostLongest)
        .build(pairs.iter().map(|(latin, _)| latin))
        .expect("a list of words builds an automaton")
}

/// The words of `words` found in `text` standing whole: no ASCII letter or digit right before
/// the word, nor right after it and the first of `endings` that follows it (`b""` for none).
pub(crate) fn whole_words<'a>(
    words: &'a AhoCorasick,
    text: &'a str,
    endings: &'a [&'a [u8]],
) -> impl Iterator<Item = Match> + 'a {
    let bytes = text.as_bytes();
    let joins = move |i: usize| bytes.get(i).is_some_and(u8::is_ascii_alphanumeric);
    words.find_iter(text).filter(move |m| {
        let rest = &bytes[m.end()..];
        let ends = endings.iter().any(|ending| {
            rest.len() >= ending.len()
                && rest[..ending.len()].eq_ignore_ascii_case(ending)
                && !joins(m.end() + ending.len())
        });
        ends && !(m.start() > 0 && joins(m.start() - 1))
    })
}

/// `text` with every name of [`CHINESE_NAMES`] that stands as a whole word (no ASCII letter or
/// digit right before or after it) written in Chinese; borrowed when it names none.
pub fn read_names(text: &str) -> Cow<'_, str> {
    let mut read = String::new();
    let mut copied = 0;
    for m in whole_words(&NAMES, text, &[b""]) {
        read.push_str(&text[copied..m.start()]);
        read.push_str(CHINESE_NAMES[m.pattern().as_usize()].1);
        copied = m.end();
    }
    if copied == 0 {
        return Cow::Borrowed(text);
    }
    read.push_str(&text[copied..]);
    Cow::Owned(read)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_services_are_found_in_chinese_text() {
        for text in ["微信小程序", "小红书", "哔哩哔哩", "做简历"] {
            assert!(names_in_chinese(text), "{text}");
        }
        // `云` is on a list, but alone it is in too many words to count.
        for text in ["荣翩瞿颢", "云朵", "Xiaohongshu"] {
            assert!(!names_in_chinese(text), "{text}");
        }
    }

    #[test]
    fn names_standing_whole_are_read_in_chinese() {
        assert_eq!(read_names("grow our followers on Xiaohongshu"), "grow our followers on 小红书");
        assert_eq!(read_names("cut our ALIBABA CLOUD bill"), "cut our 阿里云 bill");
        assert_eq!(read_names("China's gaokao, in Shenzhen."), "China's 高考, in 深圳.");
        assert_eq!(read_names("WeChat Pay and WeChat"), "微信支付 and 微信");
        assert_eq!(read_names("在Shenzhen注册"), "在深圳注册");
    }

    #[test]
    fn names_inside_other_words_and_plain_text_are_kept() {
        for text in ["Shanghaied", "weibo2", "a JD for a backend engineer", "no names here", ""] {
            assert!(matches!(read_names(text), Cow::Borrowed(_)), "{text}");
        }
        assert_eq!(read_names("xWeChat and WeChat"), "xWeChat and 微信");
    }

    #[test]
    fn every_name_is_read() {
        for (latin, chinese) in CHINESE_NAMES {
            assert_eq!(read_names(latin), *chinese, "{latin}");
        }
    }
}
