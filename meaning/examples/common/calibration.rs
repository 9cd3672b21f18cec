//! Needs stated as clients state them, for calibrating the need encoder: templates filled with
//! the directory's subject words, in English and in Chinese. None is taken from the judged sets
//! of bench/relevance*, which measure the encoder. Shared by `calibrate_static.rs` and
//! `static_compare.rs`.

const EN_WORDS: &[&str] = &[
    "data",
    "translation",
    "analysis",
    "legal",
    "document",
    "python",
    "research",
    "writing",
    "design",
    "marketing",
    "support",
    "automation",
    "scraping",
    "report",
    "review",
    "code",
    "testing",
    "security",
    "audit",
    "finance",
    "accounting",
    "education",
    "medical",
    "video",
    "audio",
    "image",
    "summary",
    "localization",
    "chinese",
    "english",
    "contract",
    "api",
    "database",
    "cloud",
    "deployment",
    "monitoring",
    "chatbot",
    "customer",
    "sales",
    "email",
    "seo",
    "content",
    "social media",
    "strategy",
    "planning",
    "schedule",
    "travel",
    "music",
    "game",
    "math",
    "patent",
    "compliance",
    "tax",
    "invoice",
    "spreadsheet",
    "dashboard",
    "visualization",
    "forecast",
    "workflow",
    "integration",
    "pdf",
    "ocr",
    "speech",
    "subtitle",
    "proofreading",
    "editing",
    "copywriting",
    "branding",
    "logo",
    "illustration",
    "animation",
    "frontend",
    "backend",
    "mobile app",
    "devops",
    "hiring",
    "payroll",
    "bookkeeping",
    "podcast",
    "website",
];
const EN_FILLER: &[&str] = &[
    "quick",
    "reliable",
    "cheap",
    "detailed",
    "weekly",
    "monthly",
    "urgent",
    "small",
    "large",
    "custom",
    "simple",
    "accurate",
    "ongoing",
    "one-off",
    "professional",
    "bilingual",
];
const EN_TEMPLATES: &[&str] = &[
    "{a} {b}",
    "{a}",
    "{f} {a}",
    "someone who can help with {a} and {b}",
    "I need an agent for {a} {b} for my small business",
    "looking for help with {a}: mostly {b}",
    "who can do {a} {b} in Chinese?",
    "we need {a} and {b} done this week",
    "an agent that handles {a} for a {b} project",
    "can you do {f} {a} for our team",
    "I have a problem with my {a} and need {b}",
    "recommend a {f} {a} service",
];
const ZH_WORDS: &[&str] = &[
    "数据",
    "翻译",
    "分析",
    "法律",
    "文档",
    "研究",
    "写作",
    "设计",
    "营销",
    "客服",
    "自动化",
    "爬虫",
    "报告",
    "审核",
    "代码",
    "测试",
    "安全",
    "审计",
    "财务",
    "会计",
    "教育",
    "医疗",
    "视频",
    "音频",
    "图像",
    "摘要",
    "本地化",
    "中文",
    "英文",
    "合同",
    "接口",
    "数据库",
    "云计算",
    "部署",
    "监控",
    "机器人",
    "客户",
    "销售",
    "邮件",
    "内容",
    "社交媒体",
    "策略",
    "规划",
    "旅行",
    "音乐",
    "游戏",
    "数学",
    "专利",
    "合规",
    "税务",
    "发票",
    "表格",
    "可视化",
    "预测",
    "工作流",
    "集成",
    "识别",
    "语音",
    "字幕",
    "校对",
    "编辑",
    "文案",
    "品牌",
    "插画",
    "动画",
    "前端",
    "后端",
    "移动应用",
    "运维",
    "招聘",
    "工资",
    "记账",
    "播客",
    "网站",
];
const ZH_FILLER: &[&str] =
    &["快速", "可靠", "便宜", "详细", "每周", "每月", "紧急", "小型", "定制", "简单", "准确", "专业", "双语"];
const ZH_TEMPLATES: &[&str] = &[
    "{a}{b}",
    "{a}",
    "{f}{a}",
    "找一个能做{a}和{b}的智能体",
    "需要{a}方面的帮助，最好懂{b}",
    "有没有人会做{a}{b}",
    "我们公司要做{a}，预算有限，还涉及{b}",
    "帮我找{f}的{a}服务",
    "我的{a}出了问题，需要{b}",
    "这周之内要完成{a}和{b}",
];
/// Needs per language.
pub const PER_LANGUAGE: usize = 800;

pub struct Rng(pub u64);

impl Rng {
    pub fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

fn needs(templates: &[&str], words: &[&str], filler: &[&str], rng: &mut Rng) -> Vec<String> {
    let mut out = Vec::new();
    while out.len() < PER_LANGUAGE {
        let (a, b) = (words[rng.below(words.len())], words[rng.below(words.len())]);
        if a == b {
            continue;
        }
        let t = templates[rng.below(templates.len())];
        out.push(t.replace("{a}", a).replace("{b}", b).replace("{f}", filler[rng.below(filler.len())]));
    }
    out
}

/// The English needs and the Chinese needs, [`PER_LANGUAGE`] each, always the same.
pub fn calibration_needs() -> (Vec<String>, Vec<String>) {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let en = needs(EN_TEMPLATES, EN_WORDS, EN_FILLER, &mut rng);
    let zh = needs(ZH_TEMPLATES, ZH_WORDS, ZH_FILLER, &mut rng);
    (en, zh)
}
